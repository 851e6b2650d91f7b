import Foundation
import Synchronization

/// Deprecation warnings of the configuration decoder: a former spelling that is still read
/// (`leaseSeconds: 30` for `lease: 30s`). Each is reported once per process and position, on
/// standard error, as `file:line:column: warning: …`.
public enum ConfigWarnings {
    private struct State {
        var seen: Set<String> = []
        var recorded: [JobFileError] = []
        var printing = true
    }
    private static let state = Mutex(State())

    /// Reports a warning unless this process already reported it.
    static func deprecated(_ position: SourcePosition, _ message: String) {
        let warning = JobFileError(position, message)
        let first = state.withLock { state in
            guard state.seen.insert(warning.description).inserted else { return false }
            if state.recorded.count < 1000 { state.recorded.append(warning) }
            return state.printing
        }
        if first { FileHandle.standardError.write(Data("\(position): warning: \(message)\n".utf8)) }
    }

    /// Stops printing warnings (they are still recorded): for a fuzzer that decodes thousands
    /// of generated files.
    public static func stopPrinting() { state.withLock { $0.printing = false } }

    /// The warnings reported so far in this process (at most 1000).
    public static var recorded: [JobFileError] { state.withLock { $0.recorded } }
}
