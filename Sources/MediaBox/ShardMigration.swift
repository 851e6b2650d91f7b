import ConfinedFiles
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Moves the files of a flat store (every file directly in its location's directory) into their
/// shard directories (`MediaShard`), crash-safe and resumable:
///
/// 1. the shard folders a batch of files needs are created (0700), as writes create them too;
/// 2. each resource file (`<name>`, `<name>_partial` with its range record, and the
///    `_partial.meta` / `_partial.want` files beside it) is moved with
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
    static func run(media: ConfinedDirectory, storageBox: StorageBox, threads: Int) throws -> Int {
        var moved = 0
        for location in MediaStorageLocation.allCases {
            let directory = try media.directory(location.directoryName ?? "")
            while true {
                let pass = try movePass(directory: directory, threads: threads)
                moved += pass
                if pass == 0 { break }
            }
        }
        try syncFileSystem(media)
        try storageBox.setMediaLayout(.sharded)
        return moved
    }

    /// One readdir pass over a location directory; returns how many files it moved.
    private static func movePass(directory: ConfinedDirectory, threads: Int) throws -> Int {
        var moved = 0
        var batch: [String] = []
        batch.reserveCapacity(batchSize)
        try directory.forEachEntry { name, type in
            if type == .directory { return }
            guard resourceFileBase(name) != nil else { return }
            if type != .regular {
                guard let st = try PosixFile.lstat(name, in: directory), (st.st_mode & S_IFMT) == S_IFREG else { return }
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
    /// `<name>_partial.want`, or an earlier version's `<name>_partial.meta`), or nil for a name
    /// MediaBox never produces.
    static func resourceFileBase(_ name: String) -> String? {
        var base = name
        if name.hasSuffix(ResourceStorePaths.legacyMetaSuffix) {
            base = String(name.dropLast(ResourceStorePaths.legacyMetaSuffix.count))
        } else if name.hasSuffix(ResourceStorePaths.wantsSuffix) {
            base = String(name.dropLast(ResourceStorePaths.wantsSuffix.count))
        } else if name.hasSuffix(ResourceStorePaths.partialSuffix) {
            base = String(name.dropLast(ResourceStorePaths.partialSuffix.count))
        }
        return MediaResourceId.isSafeFileName(base) ? base : nil
    }

    /// The first error of a batch's threads.
    private final class FirstError: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: (any Error)?
        private var movedCount = 0
        func record(_ e: any Error) {
            lock.lock()
            if stored == nil { stored = e }
            lock.unlock()
        }
        func add(_ n: Int) {
            lock.lock()
            movedCount += n
            lock.unlock()
        }
        var error: (any Error)? { lock.lock(); defer { lock.unlock() }; return stored }
        var moved: Int { lock.lock(); defer { lock.unlock() }; return movedCount }
    }

    private static func moveBatch(_ names: [String], directory: ConfinedDirectory, threads: Int) throws -> Int {
        if names.isEmpty { return 0 }
        for shard in Set(names.compactMap { MediaShard.name(forStoredFile: $0) }) {
            try PosixFile.makeDirectory(shard, in: directory)
        }
        let outcome = FirstError()
        let workers = max(1, min(threads, names.count))
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            var i = worker
            var n = 0
            while i < names.count {
                do {
                    if try move(names[i], directory: directory) { n += 1 }
                } catch {
                    outcome.record(error)
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
    private static func move(_ name: String, directory: ConfinedDirectory) throws -> Bool {
        guard let base = resourceFileBase(name) else { return false }
        let target = MediaShard.name(forFileName: base) + "/" + name
        do {
            // False when the shard already has it: left with both names by an earlier run, or
            // written in the shard already. The shard's file wins (a complete file's content
            // never changes for its id).
            _ = try directory.link(name, to: target)
        } catch {
            if case .system(_, _, ENOENT) = error { return false }
            throw error
        }
        return try directory.removeFile(name)
    }

    private static func syncFileSystem(_ media: ConfinedDirectory) throws {
        if PosixFile.hasSyncFileSystem { return try PosixFile.syncFileSystem(containing: media.descriptor, files: [], path: media.path) }
        // Without syncfs: every directory a move changed.
        for location in MediaStorageLocation.allCases {
            let directory = try media.directory(location.directoryName ?? "")
            for shard in MediaShard.names where PosixFile.exists(shard, in: directory) {
                try directory.directory(shard).sync()
            }
            try directory.sync()
        }
    }
}
