import Foundation

/// Runs `ResourceRemoval.remove` over many files on several threads. An unlink mostly waits
/// (on the device's discard of the freed blocks, on the journal), so more threads than cores
/// keep more of those waits in flight (`CleanupOptions.defaultRemovalThreads`).
enum ParallelRemoval {
    /// Each thread writes only its own indices of the buffer.
    private final class Outcomes: @unchecked Sendable {
        let buffer: UnsafeMutableBufferPointer<ResourceRemoval.Outcome>
        init(count: Int) {
            buffer = .allocate(capacity: count)
            buffer.initialize(repeating: .missing)
        }
        deinit { buffer.deallocate() }
    }

    static func run(_ paths: [ResourceStorePaths], threads: Int, dryRun: Bool) -> [ResourceRemoval.Outcome] {
        let n = paths.count
        if n == 0 { return [] }
        let workers = max(1, min(threads, n))
        if workers == 1 { return paths.map { ResourceRemoval.remove($0, dryRun: dryRun) } }
        let outcomes = Outcomes(count: n)
        // Plain threads, not concurrentPerform: its width is the core count, and unlinks mostly
        // wait, so many more threads than cores help.
        let group = DispatchGroup()
        for worker in 0..<workers {
            group.enter()
            let thread = Thread {
                var i = worker
                while i < n {
                    outcomes.buffer[i] = ResourceRemoval.remove(paths[i], dryRun: dryRun)
                    i += workers
                }
                group.leave()
            }
            thread.start()
        }
        group.wait()
        return Array(outcomes.buffer)
    }
}
