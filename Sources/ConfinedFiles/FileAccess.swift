#if canImport(Glibc)
    import Glibc
#endif

/// How a file below a `ConfinedDirectory` is opened. Anything that writes refuses a file with
/// more than one hard link, and truncation happens only after that check.
public struct FileAccess: Sendable, Equatable {
    /// `open(2)` flags, without `O_TRUNC` (applied by `ftruncate` after the checks).
    let flags: Int32
    /// Empty the file once it is known to be safe to write.
    let truncates: Bool

    /// Read an existing file.
    public static let read = FileAccess(flags: O_RDONLY, truncates: false)
    /// Read and write an existing file.
    public static let readWrite = FileAccess(flags: O_RDWR, truncates: false)
    /// Read and write, creating the file when missing.
    public static let readWriteCreating = FileAccess(flags: O_RDWR | O_CREAT, truncates: false)
    /// Create a file that must not exist yet.
    public static let createNew = FileAccess(flags: O_RDWR | O_CREAT | O_EXCL, truncates: false)
    /// Write from the start, creating the file or emptying the one there.
    public static let replaceContents = FileAccess(flags: O_WRONLY | O_CREAT, truncates: true)
    /// Read and write from the start, creating the file or emptying the one there.
    public static let rewrite = FileAccess(flags: O_RDWR | O_CREAT, truncates: true)
    /// Append, creating the file when missing.
    public static let append = FileAccess(flags: O_WRONLY | O_CREAT | O_APPEND, truncates: false)

    /// True when the open may change the file.
    public var writes: Bool { flags & O_ACCMODE != O_RDONLY || truncates }
}
