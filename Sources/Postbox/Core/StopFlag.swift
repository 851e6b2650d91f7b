import Synchronization

/// A flag set once, from any thread, and read by work that should stop: a blocking loop told by
/// a cancellation handler, or tasks waiting for a slot after their pass stopped sending.
public final class StopFlag: Sendable {
    private let flag = Mutex(false)

    public init() {}

    public var isSet: Bool { flag.withLock { $0 } }
    public func set() { flag.withLock { $0 = true } }
}
