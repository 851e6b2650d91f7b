import ConfinedFiles
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `<root>/locks/stores.lock`: every process that opens a root's stores holds it shared for as
/// long as it lives (`RootKey.load` takes it), and `jobrun encrypt` / `jobrun rekey` hold it
/// exclusive while they rewrite the stores. So a conversion never starts while another process
/// has a store open, and no process opens a store while one runs. The kernel drops the lock
/// when its holder exits for any reason.
enum RootStoresLock {
    static let fileName = "stores.lock"

    /// Descriptors holding the shared lock, by root path: one per root for the process's life.
    private static let shared = Mutex<[String: Int32]>([:])

    /// Takes the shared lock of `root` once per process. A reader (`create` false: `status`,
    /// `stats`) creates nothing and goes without the lock where its file does not exist yet;
    /// so does every process on a root whose `locks/` folder cannot be made (a read-only root:
    /// nothing can convert it either).
    static func holdShared(_ root: DataRoot, create: Bool) throws(JobError) {
        if shared.withLock({ $0[root.path] != nil }) { return }
        guard let fd = try? open(root, create: create && !StoreInspection.directoryIsFrozen(root.path)) else { return }
        if flock(fd, LOCK_SH | LOCK_NB) != 0 {
            close(fd)
            throw JobError(
                "the stores of \(root.path) are being converted by `jobrun encrypt` or `jobrun rekey`; try again when it has finished",
                exitCode: .temporary, retryable: true)
        }
        let kept = shared.withLock { held -> Bool in
            if held[root.path] != nil { return false }
            held[root.path] = fd
            return true
        }
        if !kept { close(fd) }
    }

    /// Takes the exclusive lock of `root` (the caller closes the descriptor to release it), or
    /// fails with exit 75 naming why when any other process has the root's stores open.
    static func holdExclusive(_ root: DataRoot, doing: String) throws(JobError) -> Int32 {
        let fd: Int32
        do { fd = try open(root, create: true) } catch {
            throw StorageFailure.jobError(error, doing: "cannot \(doing) \(root.path)")
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            close(fd)
            throw JobError(
                "cannot \(doing) \(root.path): another process has its stores open (a run, `jobrun schedule`, `status`…); stop the scheduler and timers and try again",
                exitCode: .temporary, retryable: true)
        }
        return fd
    }

    /// The lock file, opened beneath `locks/` (no link followed, no FIFO opened, a hard-linked
    /// file never opened for writing).
    private static func open(_ root: DataRoot, create: Bool) throws -> Int32 {
        try root.directory(["locks"], create: create).openFile(fileName, create ? .readWriteCreating : .read)
    }
}
