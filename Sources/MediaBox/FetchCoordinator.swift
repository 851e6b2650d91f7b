import Foundation
import Synchronization

/// In-process deduplication of fetches: concurrent requests for one resource share one flight,
/// so the injected fetcher runs once. (Across processes the partial file's lock does it.)
///
/// Cancellation follows the callers: a cancelled caller stops waiting at once, and when the
/// last caller of a flight has gone the flight itself is cancelled — the fetcher's stream ends,
/// the partial file keeps what arrived and its lock is released for the next fetch.
final class FetchCoordinator: Sendable {
    private let flights = Mutex<[MediaStorageKey: Flight]>([:])

    func run(_ key: MediaStorageKey, _ operation: @escaping @Sendable () async throws -> MediaResourceData) async throws -> MediaResourceData {
        let (flight, waiter) = flights.withLock { flights -> (Flight, UInt64) in
            if let existing = flights[key], let waiter = existing.join() { return (existing, waiter) }
            let flight = Flight()  // none yet, or the last one was abandoned by all its callers
            flights[key] = flight
            return (flight, flight.join()!)
        }
        flight.start { [weak self] in
            let result: Result<MediaResourceData, any Error>
            do { result = .success(try await operation()) } catch { result = .failure(error) }
            self?.forget(key, flight)
            flight.land(result)
        }
        return try await withTaskCancellationHandler {
            try await flight.wait(waiter)
        } onCancel: {
            if flight.leave(waiter) { self.forget(key, flight) }
        }
    }

    /// A flight that landed or was abandoned no longer answers new callers.
    private func forget(_ key: MediaStorageKey, _ flight: Flight) {
        flights.withLock { if $0[key] === flight { $0[key] = nil } }
    }
}

/// One fetch in progress and the callers waiting for it.
private final class Flight: Sendable {
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
