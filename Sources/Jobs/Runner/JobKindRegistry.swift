import Foundation

/// Which `JobKindRunner` runs each `JobKind`. The CLI builds one registry with every kind this
/// build ships; tests may build their own.
public struct JobKindRegistry: Sendable {
    private var runners: [JobKind: any JobKindRunner]

    public init(_ runners: [JobKind: any JobKindRunner] = [:]) { self.runners = runners }

    public func runner(for kind: JobKind) -> (any JobKindRunner)? { runners[kind] }

    public mutating func register(_ kind: JobKind, _ runner: any JobKindRunner) { runners[kind] = runner }

    public var kinds: [JobKind] { runners.keys.sorted { $0.rawValue < $1.rawValue } }
}
