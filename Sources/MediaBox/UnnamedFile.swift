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

    /// `O_TMPFILE`, from the kernel headers (`__O_TMPFILE | O_DIRECTORY`); Glibc's module does
    /// not export it.
    private static let tmpFileFlag: Int32 = 0o20000000 | O_DIRECTORY

    /// A new unnamed file in `directory` (created with missing parents when needed), or nil when
    /// the file system cannot make one (no `O_TMPFILE`: NFS, some FUSE and overlay mounts).
    static func create(in directory: String) throws -> UnnamedFile? {
        var fd = open(directory)
        if fd < 0 && errno == ENOENT {
            try PosixFile.makeDirectory(directory)
            fd = open(directory)
        }
        if fd >= 0 { return UnnamedFile(descriptor: fd) }
        switch errno {
        case EOPNOTSUPP, EISDIR, EINVAL: return nil
        default: throw PosixFile.fail(directory, "open (O_TMPFILE)")
        }
    }

    private static func open(_ directory: String) -> Int32 {
        while true {
            let fd = Glibc.open(directory, tmpFileFlag | O_RDWR | O_CLOEXEC, PosixFile.fileMode)
            if fd >= 0 || errno != EINTR { return fd }
        }
    }

    /// Gives the file the name `path`. False when a file of that name is already there (another
    /// writer completed the same resource first). Through `/proc/self/fd`, which needs no
    /// privilege, unlike `AT_EMPTY_PATH`.
    func link(to path: String) throws -> Bool {
        if linkat(AT_FDCWD, "/proc/self/fd/\(descriptor)", AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0 { return true }
        if errno == EEXIST { return false }
        throw PosixFile.fail(path, "linkat")
    }

    func close() { Glibc.close(descriptor) }
}
