import ConfinedFiles
import Foundation
import Synchronization

/// Runs `ResourceRemoval.remove` over many files on several threads. An unlink mostly waits
/// (on the device's discard of the freed blocks, on the journal), so more threads than cores
/// keep more of those waits in flight (`CleanupOptions.defaultRemovalThreads`).
enum ParallelRemoval {
    /// Each index is taken by exactly one thread (`next`), which alone writes its outcome.
    private final class Outcomes: @unchecked Sendable {
        let buffer: UnsafeMutableBufferPointer<ResourceRemoval.Outcome>
        /// The next index to take.
        let next = Atomic<Int>(0)
        init(count: Int) {
            buffer = .allocate(capacity: count)
            buffer.initialize(repeating: .missing)
        }
        deinit { buffer.deallocate() }
    }

    static func run(_ paths: [ResourceStorePaths], in media: ConfinedDirectory, threads: Int, dryRun: Bool) -> [ResourceRemoval.Outcome] {
        let n = paths.count
        if n == 0 { return [] }
        let workers = max(1, min(threads, n))
        if workers == 1 { return paths.map { ResourceRemoval.remove($0, in: media, dryRun: dryRun) } }
        let outcomes = Outcomes(count: n)
        // Plain threads, not concurrentPerform: its width is the core count, and unlinks mostly
        // wait, so many more threads than cores help. Each thread takes the next file when it is
        // done with one, so a slow unlink (a long discard) holds up one thread, not a share of
        // the batch fixed in advance.
        let group = DispatchGroup()
        for _ in 0..<workers {
            group.enter()
            let thread = Thread {
                while case let i = outcomes.next.wrappingAdd(1, ordering: .relaxed).oldValue, i < n {
                    outcomes.buffer[i] = ResourceRemoval.remove(paths[i], in: media, dryRun: dryRun)
                }
                group.leave()
            }
            thread.start()
        }
        group.wait()
        return Array(outcomes.buffer)
    }
}
