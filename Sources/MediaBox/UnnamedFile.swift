import ConfinedFiles
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A file written under no name (`O_TMPFILE`) and given its complete name in one `linkat` once
/// its data is durable: what `MediaBox.storeBatch` writes a resource whose bytes are all in hand.
///
/// Against a `<name>_partial` file linked into place and unlinked, it saves a directory entry
/// created and removed per file, the partial's lock and the checks that go with it (about a
/// sixth of the store thread's CPU for small files). A file that is never linked (the process dies
/// first) is freed by the kernel with its last descriptor: no partial name is left to
/// reconcile. After a power loss, a journaled file system frees it at mount from its orphan
/// list; one without a journal (ext4 `^has_journal`) keeps its blocks until `fsck`.
///
/// Two writers of the same resource do not wait for each other: both link, the second finds
/// the name taken, and the contents are equal (a resource's bytes never change).
struct UnnamedFile {
    let descriptor: Int32

    /// A new unnamed file in the directory `relative` beneath `media` (created with missing
    /// parents when needed), or nil when the file system cannot make one (no `O_TMPFILE`: NFS,
    /// some FUSE and overlay mounts).
    static func create(in relative: String, of media: ConfinedDirectory) throws -> UnnamedFile? {
        let directory: ConfinedDirectory
        do { directory = try media.directory(relative) } catch {
            guard case .system(_, _, ENOENT) = error else { throw error }
            directory = try PosixFile.makeDirectory(relative, in: media)
        }
        return try directory.createUnnamedFile(mode: PosixFile.fileMode).map { UnnamedFile(descriptor: $0) }
    }

    /// Gives the file the name `relative` beneath `media`. False when a file of that name is
    /// already there (another writer completed the same resource first).
    func link(to relative: String, in media: ConfinedDirectory) throws -> Bool {
        try media.link(descriptor: descriptor, to: relative)
    }

    func close() { Glibc.close(descriptor) }
}
