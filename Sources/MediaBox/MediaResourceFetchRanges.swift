import Synchronization

/// The byte ranges wanted of one resource right now, each with a priority, shared live between
/// MediaBox and the fetcher of that resource (Telegram's ranges signal to `fetchResource`).
///
/// Callers add ranges while a fetch runs; the fetcher asks `nextPart` each time it can start a
/// part and gets the first part, aligned to its part size, of the highest-priority range that
/// is neither held nor already being fetched. So a `.maximum` request that arrives during a
/// `.default` transfer is served by the very next part that starts, and never waits for the
/// lower one to finish. `0..<headerSize` ranks above everything, so a streamable resource's
/// header always comes first.
///
/// MediaBox records each range it writes (`held`), which also ends its being in flight; a part
/// that fails is given back with `release`.
public final class MediaResourceFetchRanges: Sendable {
    private struct Want {
        let ticket: UInt64
        let range: Range<Int64>
        let priority: MediaFetchPriority
    }

    private struct State {
        var wants: [Want] = []
        var held = RangeMap()
        var inFlight = RangeMap()
        var size: Int64?
        var closed = false
        var failure: (any Error)?
        var nextTicket: UInt64 = 0
        /// Tickets of ranges other processes asked for (`ForeignWants`): nobody here waits on them.
        var foreign: Set<UInt64> = []
        var generation = 0
        var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var listener: (@Sendable () -> Void)?
    }

    /// Bytes of the resource fetched before any other (0 when it declares no header).
    public let headerSize: Int64
    private let state: Mutex<State>

    init(headerSize: Int64, held: RangeMap = RangeMap(), size: Int64? = nil) {
        self.headerSize = max(0, headerSize)
        var s = State()
        s.held = held
        s.size = size
        state = Mutex(s)
    }

    // MARK: fetcher side

    /// The next part to fetch — `partSize`-aligned, within `fileSize` when known — of the
    /// highest-priority wanted range not yet held or in flight, marked as in flight; nil when
    /// every wanted byte is held or being fetched.
    public func nextPart(partSize: Int64, fileSize: Int64? = nil) -> Range<Int64>? {
        nextPrioritizedPart(partSize: partSize, fileSize: fileSize)?.range
    }

    /// `nextPart`, with the priority of the callers the part serves: the highest priority of
    /// the wanted ranges it overlaps, or (a header fetched first for callers who want other
    /// bytes) the highest of all. The header's own rank orders parts within this resource
    /// only; across resources a part is as urgent as the callers waiting for it, so the header
    /// of a background prefetch never counts as `.maximum`.
    ///
    /// `largePartSize` (a multiple of `partSize`): the part is that large instead when it starts
    /// on a multiple of it, every byte of it is missing, and one caller's range — short of the
    /// whole file — holds all of it (a video's prefix on a fast link), so that one request
    /// brings what would otherwise take several.
    public func nextPrioritizedPart(
        partSize: Int64, largePartSize: Int64? = nil, fileSize: Int64? = nil
    ) -> (range: Range<Int64>, priority: MediaFetchPriority)? {
        precondition(partSize > 0)
        return state.withLock { s -> (Range<Int64>, MediaFetchPriority)? in
            let limit = fileSize ?? s.size ?? Int64.max
            for want in Self.ordered(s.wants, headerSize: headerSize) {
                let wanted = want.range.clamped(to: 0..<limit)
                guard let first = Self.firstMissing(wanted, s) else { continue }
                let start = first / partSize * partSize
                var part = start..<min(start + partSize, limit)
                if let large = largePartSize, large > partSize, first % large == 0 {
                    let block = first..<min(first + large, limit)
                    // Some caller's range holds all of it (the header's own rank is no caller).
                    // A fetch of a whole file keeps the file's part size, as Telegram's part
                    // rules have it.
                    let covered = s.wants.contains { w in
                        w.range.lowerBound <= block.lowerBound && w.range.upperBound >= block.upperBound
                            && !(w.range.lowerBound == 0 && w.range.upperBound >= limit)
                    }
                    if covered, Self.isMissing(block, s) { part = block }
                }
                s.inFlight.insert(part)
                let served = s.wants.filter { $0.range.overlaps(part) }.map(\.priority).max()
                return (part, served ?? s.wants.map(\.priority).max() ?? .default)
            }
            return nil
        }
    }

    /// Gives back a part that was taken by `nextPart` and will not be delivered.
    public func release(_ part: Range<Int64>) {
        state.withLock { $0.inFlight.remove(part) }
    }

    /// The wanted ranges, highest priority first (the header first of all when not yet held).
    public var wanted: [(range: Range<Int64>, priority: MediaFetchPriority)] {
        state.withLock { s in Self.ordered(s.wants, headerSize: headerSize).map { ($0.range, $0.priority) } }
    }

    /// Called (from any thread) whenever ranges are added, so a fetcher waiting for work looks
    /// again. One listener at a time: the fetcher of the current stream.
    public func setListener(_ listener: (@Sendable () -> Void)?) {
        state.withLock { $0.listener = listener }
    }

    // MARK: MediaBox side

    /// The header (when not held) first, then by priority, earlier requests first within one.
    private static func ordered(_ wants: [Want], headerSize: Int64) -> [Want] {
        var out = wants.sorted { ($0.priority.rawValue, -Int64(bitPattern: $0.ticket)) > ($1.priority.rawValue, -Int64(bitPattern: $1.ticket)) }
        if headerSize > 0 { out.insert(Want(ticket: .max, range: 0..<headerSize, priority: .maximum), at: 0) }
        return out
    }

    /// Whether no byte of `range` is held or in flight.
    private static func isMissing(_ range: Range<Int64>, _ s: State) -> Bool {
        !s.held.ranges.contains { $0.overlaps(range) } && !s.inFlight.ranges.contains { $0.overlaps(range) }
    }

    /// The first byte of `range` that is neither held nor in flight.
    private static func firstMissing(_ range: Range<Int64>, _ s: State) -> Int64? {
        var cursor = range.lowerBound
        while cursor < range.upperBound {
            if let r = s.held.range(containing: cursor) ?? s.inFlight.range(containing: cursor) {
                cursor = r.upperBound
            } else {
                return cursor
            }
        }
        return nil
    }

    /// Adds a caller's ranges (`foreign`: another process's); nil once the fetch has closed
    /// (start a new one).
    func add(_ ranges: [Range<Int64>], priority: MediaFetchPriority, foreign: Bool = false) -> UInt64? {
        let (ticket, listener) = state.withLock { s -> (UInt64?, (@Sendable () -> Void)?) in
            guard !s.closed else { return (nil, nil) }
            let ticket = s.nextTicket
            s.nextTicket += 1
            if foreign { s.foreign.insert(ticket) }
            s.generation += 1
            for r in ranges where !r.isEmpty { s.wants.append(Want(ticket: ticket, range: r, priority: priority)) }
            return (ticket, s.listener)
        }
        listener?()
        return ticket
    }

    /// Changes each time ranges are added.
    var generation: Int { state.withLock { $0.generation } }

    /// Forgets a caller's ranges (it was cancelled): parts not started for them never start.
    func remove(_ ticket: UInt64) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, any Error>? in
            s.wants.removeAll { $0.ticket == ticket }
            return s.waiters.removeValue(forKey: ticket)
        }
        waiter?.resume(throwing: CancellationError())
    }

    /// Waits until every range of `ticket` is held (or the fetch fails).
    func wait(_ ticket: UInt64) async throws {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
            let now = state.withLock { s -> Result<Void, any Error>? in
                if Self.satisfied(ticket, s) { return .success(()) }
                if let f = s.failure { return .failure(f) }
                if !s.wants.contains(where: { $0.ticket == ticket }) { return .failure(CancellationError()) }
                s.waiters[ticket] = c
                return nil
            }
            if let now { c.resume(with: now) }
        }
    }

    private static func satisfied(_ ticket: UInt64, _ s: State) -> Bool {
        let limit = s.size ?? Int64.max
        let mine = s.wants.filter { $0.ticket == ticket }
        return !mine.isEmpty && mine.allSatisfy { s.held.contains($0.range.clamped(to: 0..<limit)) }
    }

    /// Records bytes now in the partial file, and wakes the callers they satisfy.
    func held(_ range: Range<Int64>) {
        let ready = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
            s.held.insert(range)
            s.inFlight.remove(range)
            return Self.takeSatisfied(&s)
        }
        for c in ready { c.resume() }
    }

    /// Replaces what is held (another process's progress read from the meta).
    func setHeld(_ map: RangeMap) {
        let ready = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
            s.held = map
            return Self.takeSatisfied(&s)
        }
        for c in ready { c.resume() }
    }

    func setSize(_ size: Int64?) {
        let ready = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
            s.size = size
            return Self.takeSatisfied(&s)
        }
        for c in ready { c.resume() }
    }

    private static func takeSatisfied(_ s: inout State) -> [CheckedContinuation<Void, any Error>] {
        var out: [CheckedContinuation<Void, any Error>] = []
        for (ticket, c) in s.waiters where satisfied(ticket, s) {
            out.append(c)
            s.waiters[ticket] = nil
        }
        return out
    }

    /// A stream ended: nothing it took is in flight any more.
    func streamEnded() {
        state.withLock { s in
            s.inFlight = RangeMap()
            s.listener = nil
        }
    }

    /// Whether what is still missing was asked for by other processes only: the fetch then
    /// ends once it has served them, and a caller here waits for that rather than leave them
    /// half-fetched.
    var onlyForeignWantsLeft: Bool {
        state.withLock { s in
            let limit = s.size ?? Int64.max
            return s.wants.allSatisfy { s.foreign.contains($0.ticket) || s.held.contains($0.range.clamped(to: 0..<limit)) }
        }
    }

    /// Whether some caller wants the whole resource (its size, when known, or everything from
    /// offset 0): the fetch then ends in a complete file.
    var wantsWholeResource: Bool {
        state.withLock { s in
            s.wants.contains { $0.range.lowerBound == 0 && $0.range.upperBound >= (s.size ?? Int64.max) }
        }
    }

    /// Whether every wanted byte (and the header) is held.
    var isSatisfied: Bool {
        state.withLock { s in Self.allHeld(s, headerSize: headerSize) }
    }

    /// Every wanted byte held; never when nobody wants anything (every caller left).
    private static func allHeld(_ s: State, headerSize: Int64) -> Bool {
        guard !s.wants.isEmpty else { return false }
        let limit = s.size ?? Int64.max
        return ordered(s.wants, headerSize: headerSize).allSatisfy { s.held.contains($0.range.clamped(to: 0..<limit)) }
    }

    /// Closes the fetch when every wanted byte is held: later callers start a new one.
    func closeIfSatisfied() -> Bool {
        state.withLock { s in
            guard Self.allHeld(s, headerSize: headerSize) else { return false }
            s.closed = true
            return true
        }
    }

    /// Ends the fetch: waiting callers get `failure`, or are released to look at the result.
    func finish(failure: (any Error)?) {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
            s.closed = true
            s.failure = failure ?? s.failure
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for c in waiters {
            if let failure { c.resume(throwing: failure) } else { c.resume() }
        }
    }
}
