import Foundation

/// Group commit for completions: concurrent downloads that finish together share one `syncfs`
/// instead of paying an fsync each (~200 µs). A caller returns only after a sync that *started*
/// after its call, so everything it wrote before calling is durable.
final class GroupSync: @unchecked Sendable {
    // @unchecked Sendable: all state is guarded by `condition`.
    private let condition = NSCondition()
    private var started = 0
    private var finished = 0
    private var running = false
    private var failure: MediaBoxError?

    /// Blocks until a sync covering the caller's writes has finished. Call off the cooperative pool.
    func sync(fd: Int32, path: String) throws {
        condition.lock()
        defer { condition.unlock() }
        let target = started + 1
        while finished < target {
            if running {
                condition.wait()
                continue
            }
            running = true
            started += 1
            let mine = started
            condition.unlock()
            var error: MediaBoxError?
            do { try PosixFile.syncFileSystem(containing: fd, files: [fd], path: path) } catch let e as MediaBoxError { error = e } catch {}
            condition.lock()
            failure = error
            finished = mine
            running = false
            condition.broadcast()
        }
        if let failure { throw failure }
    }
}
