import Foundation
import Synchronization

/// In-process deduplication of fetches: concurrent requests for one resource share one flight,
/// so the injected fetcher runs once, asked for the union of the callers' ranges by priority
/// (`MediaResourceFetchRanges`). (Across processes the partial file's lock does it.)
///
/// Cancellation follows the callers: a cancelled caller stops waiting at once, and when the
/// last caller of a flight has gone the flight itself is cancelled — the fetcher's stream ends,
/// the partial file keeps what arrived and its lock is released for the next fetch.
final class FetchCoordinator: Sendable {
    private let flights = Mutex<[MediaStorageKey: Flight]>([:])

    /// Joins (or starts) the flight of `key` with `ranges` at `priority`; nil ranges want the
    /// whole resource. A whole-resource caller gets the flight's result; a ranged caller returns
    /// nil as soon as its ranges are held, while the flight goes on for the others.
    /// `operation` runs once per flight, with the flight's live ranges.
    func run(
        _ key: MediaStorageKey, ranges: [Range<Int64>]?, priority: MediaFetchPriority, headerSize: Int64,
        _ operation: @escaping @Sendable (MediaResourceFetchRanges) async throws -> MediaResourceData
    ) async throws -> MediaResourceData? {
        while true {
            let (flight, waiter) = flights.withLock { flights -> (Flight, UInt64) in
                if let existing = flights[key], let waiter = existing.join() { return (existing, waiter) }
                let flight = Flight(demand: MediaResourceFetchRanges(headerSize: headerSize))  // none yet, or abandoned
                flights[key] = flight
                return (flight, flight.join()!)
            }
            guard let ticket = flight.demand.add(ranges ?? [0..<Int64.max], priority: priority) else {
                // The flight has everything it wanted and is finishing: let it land, start anew.
                flight.done(waiter)
                _ = try? await flight.wait(waiter)
                try Task.checkCancellation()
                continue
            }
            flight.start { [weak self] in
                let result: Result<MediaResourceData, any Error>
                do { result = .success(try await operation(flight.demand)) } catch { result = .failure(error) }
                self?.forget(key, flight)
                flight.demand.finish(failure: result.failure)
                flight.land(result)
            }
            return try await withTaskCancellationHandler {
                if ranges == nil { return try await flight.wait(waiter) }
                try await flight.demand.wait(ticket)
                // When nothing else is wanted here the flight ends once it has served what other
                // processes asked of it (and indexed the partial file): return after it, so the
                // caller sees the entry and the others get their bytes. Otherwise return now,
                // while the flight goes on for lower priorities.
                if flight.demand.onlyForeignWantsLeft { _ = try? await flight.wait(waiter) }
                flight.done(waiter)
                return nil
            } onCancel: {
                flight.demand.remove(ticket)
                if flight.leave(waiter) { self.forget(key, flight) }
            }
        }
    }

    /// A flight that landed or was abandoned no longer answers new callers.
    private func forget(_ key: MediaStorageKey, _ flight: Flight) {
        flights.withLock { if $0[key] === flight { $0[key] = nil } }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}

/// One fetch in progress and the callers waiting for it.
private final class Flight: Sendable {
    /// The ranges its callers want, shared with the fetcher.
    let demand: MediaResourceFetchRanges

    init(demand: MediaResourceFetchRanges) { self.demand = demand }

    private struct State {
        var task: Task<Void, Never>?
        var result: Result<MediaResourceData, any Error>?
        var waiting: Set<UInt64> = []
        var continuations: [UInt64: CheckedContinuation<MediaResourceData, any Error>] = [:]
        var left: Set<UInt64> = []
        var nextWaiter: UInt64 = 0
        var abandoned = false
    }

    private let state = Mutex(State())

    /// A new caller's ticket, or nil when every earlier caller left and the flight was cancelled.
    func join() -> UInt64? {
        state.withLock { s in
            guard !s.abandoned else { return nil }
            defer { s.nextWaiter += 1 }
            s.waiting.insert(s.nextWaiter)
            return s.nextWaiter
        }
    }

    /// Starts the operation unless it already runs.
    func start(_ body: @escaping @Sendable () async -> Void) {
        state.withLock { s in
            if s.task == nil { s.task = Task { await body() } }
        }
    }

    func wait(_ waiter: UInt64) async throws -> MediaResourceData {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<MediaResourceData, any Error>) in
            let now = state.withLock { s -> Result<MediaResourceData, any Error>? in
                if let r = s.result { return r }
                if s.left.contains(waiter) { return .failure(CancellationError()) }
                s.continuations[waiter] = c
                return nil
            }
            if let now { c.resume(with: now) }
        }
    }

    /// Every caller still waiting gets the result.
    func land(_ result: Result<MediaResourceData, any Error>) {
        let continuations = state.withLock { s -> [CheckedContinuation<MediaResourceData, any Error>] in
            s.result = result
            s.waiting = []
            defer { s.continuations = [:] }
            return Array(s.continuations.values)
        }
        for c in continuations { c.resume(with: result) }
    }

    /// A caller that has what it wanted stops counting as waiting, without cancelling anything.
    func done(_ waiter: UInt64) {
        _ = state.withLock { $0.waiting.remove(waiter) }
    }

    /// A cancelled caller stops waiting now. Returns true when it was the last one: the flight is
    /// then cancelled.
    func leave(_ waiter: UInt64) -> Bool {
        let (continuation, last, task) = state.withLock { s -> (CheckedContinuation<MediaResourceData, any Error>?, Bool, Task<Void, Never>?) in
            guard s.result == nil, s.waiting.remove(waiter) != nil else { return (nil, false, nil) }
            s.left.insert(waiter)
            if s.waiting.isEmpty { s.abandoned = true }
            return (s.continuations.removeValue(forKey: waiter), s.waiting.isEmpty, s.task)
        }
        continuation?.resume(throwing: CancellationError())
        if last { task?.cancel() }
        return last
    }
}
