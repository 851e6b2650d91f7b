import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Moves the files of a flat store (every file directly in its location's directory) into their
/// shard directories (`MediaShard`), crash-safe and resumable:
///
/// 1. the shard folders a batch of files needs are created (0700), as writes create them too;
/// 2. each resource file (`<name>`, `<name>_partial`, `<name>_partial.meta`) is moved with
///    `link` to its shard, then `unlink` of the flat name. At every instant the file has at least
///    one of its two names, so a crash (SIGKILL, power loss after the sync below) never makes it
///    unreachable; a file left with both names is finished by the next run (same inode at the
///    target: drop the flat name). `link` never replaces a file already in the shard;
/// 3. passes repeat until one finds nothing left to move;
/// 4. the file system is synced, and only then is `MediaLayout.sharded` recorded in StorageBox.
///    Until that record exists every writable open runs the migration again, moving what is left.
///
/// Names MediaBox never produces are left where they are (reconciliation counts them as
/// foreign). The moves of a batch run on several threads, like cleanup's unlinks.
enum ShardMigration {
    /// Names read from a directory before their moves run.
    static let batchSize = 4096

    /// Migrates `mediaDirectory` and records the sharded layout. Returns the number of files moved.
    @discardableResult
    static func run(mediaDirectory: String, storageBox: StorageBox, threads: Int) throws -> Int {
        var moved = 0
        for location in MediaStorageLocation.allCases {
            let directory = ResourceStorePaths.locationDirectory(mediaDirectory: mediaDirectory, location: location)
            while true {
                let pass = try movePass(directory: directory, threads: threads)
                moved += pass
                if pass == 0 { break }
            }
        }
        try syncFileSystem(mediaDirectory)
        try storageBox.setMediaLayout(.sharded)
        return moved
    }

    /// One readdir pass over a location directory; returns how many files it moved.
    private static func movePass(directory: String, threads: Int) throws -> Int {
        var moved = 0
        var batch: [String] = []
        batch.reserveCapacity(batchSize)
        try PosixFile.forEachEntry(in: directory) { name, type in
            if type == UInt8(DT_DIR) { return }
            guard resourceFileBase(name) != nil else { return }
            if type != UInt8(DT_REG) {
                guard let st = try PosixFile.lstat(directory + "/" + name), (st.st_mode & S_IFMT) == S_IFREG else { return }
            }
            batch.append(name)
            if batch.count >= batchSize {
                moved += try moveBatch(batch, directory: directory, threads: threads)
                batch.removeAll(keepingCapacity: true)
            }
        }
        moved += try moveBatch(batch, directory: directory, threads: threads)
        return moved
    }

    /// The safe file name a resource file belongs to (`<name>`, `<name>_partial`,
    /// `<name>_partial.meta`), or nil for a name MediaBox never produces.
    static func resourceFileBase(_ name: String) -> String? {
        var base = name
        if name.hasSuffix(ResourceStorePaths.metaSuffix) {
            base = String(name.dropLast(ResourceStorePaths.metaSuffix.count))
        } else if name.hasSuffix(ResourceStorePaths.partialSuffix) {
            base = String(name.dropLast(ResourceStorePaths.partialSuffix.count))
        }
        return MediaResourceId.isSafeFileName(base) ? base : nil
    }

    /// The first error of a batch's threads.
    private final class FirstError: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: MediaBoxError?
        private var movedCount = 0
        func record(_ e: MediaBoxError) {
            lock.lock()
            if stored == nil { stored = e }
            lock.unlock()
        }
        func add(_ n: Int) {
            lock.lock()
            movedCount += n
            lock.unlock()
        }
        var error: MediaBoxError? { lock.lock(); defer { lock.unlock() }; return stored }
        var moved: Int { lock.lock(); defer { lock.unlock() }; return movedCount }
    }

    private static func moveBatch(_ names: [String], directory: String, threads: Int) throws -> Int {
        if names.isEmpty { return 0 }
        for shard in Set(names.compactMap { MediaShard.name(forStoredFile: $0) }) {
            try PosixFile.makeDirectory(directory + "/" + shard)
        }
        let outcome = FirstError()
        let workers = max(1, min(threads, names.count))
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            var i = worker
            var n = 0
            while i < names.count {
                do {
                    if try move(names[i], directory: directory) { n += 1 }
                } catch let e as MediaBoxError {
                    outcome.record(e)
                    break
                } catch {
                    outcome.record(.io(path: directory + "/" + names[i], operation: "move into shard", errno: EIO))
                    break
                }
                i += workers
            }
            outcome.add(n)
        }
        if let e = outcome.error { throw e }
        return outcome.moved
    }

    /// Moves one file into its shard: link, then unlink the flat name. False when another
    /// process moved it first.
    private static func move(_ name: String, directory: String) throws -> Bool {
        guard let base = resourceFileBase(name) else { return false }
        let source = directory + "/" + name
        let target = directory + "/" + MediaShard.name(forFileName: base) + "/" + name
        if Glibc.link(source, target) != 0 {
            switch errno {
            case ENOENT:
                return false
            case EEXIST:
                // Left with both names by an earlier run, or written in the shard already: the
                // shard's file wins (a complete file's content never changes for its id).
                break
            default:
                throw PosixFile.fail(target, "link (moving into its shard)")
            }
        }
        if Glibc.unlink(source) != 0 {
            if errno == ENOENT { return false }
            throw PosixFile.fail(source, "unlink (after moving into its shard)")
        }
        return true
    }

    private static func syncFileSystem(_ mediaDirectory: String) throws {
        let fd = try PosixFile.open(mediaDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { Glibc.close(fd) }
        if PosixFile.hasSyncFileSystem { return try PosixFile.syncFileSystem(containing: fd, files: [], path: mediaDirectory) }
        // Without syncfs: every directory a move changed.
        for location in MediaStorageLocation.allCases {
            let directory = ResourceStorePaths.locationDirectory(mediaDirectory: mediaDirectory, location: location)
            for shard in MediaShard.names where PosixFile.exists(directory + "/" + shard) {
                try PosixFile.fsyncDirectory(directory + "/" + shard)
            }
            try PosixFile.fsyncDirectory(directory)
        }
    }
}
