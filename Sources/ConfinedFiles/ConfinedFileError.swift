#if canImport(Glibc)
    import Glibc
#endif

/// Why a path below a `ConfinedDirectory` was refused or could not be used. Every case names
/// the path (escaped for printing) and what is wrong with it; none carries the file's content.
public enum ConfinedFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The path, or a folder on the way to it, is a symbolic link.
    case symbolicLink(path: String)
    /// The name would leave the directory (`..`, an absolute path, a mount crossing by a link).
    case outside(path: String)
    /// Something other than what belongs there: a FIFO, socket, device, or a directory where a
    /// file belongs (or the reverse).
    case wrongType(path: String, found: FileKind, expected: FileKind)
    /// A regular file with more than one hard link, where jobrun would write or truncate it.
    case hardLinked(path: String, links: UInt64)
    /// Writable by group or others, or owned by another user.
    case insecure(path: String, reason: String)
    /// The system call failed for another reason (`errno`).
    case system(path: String, operation: String, errno: Int32)

    /// The path the error is about, as given (not escaped).
    public var path: String {
        switch self {
        case .symbolicLink(let path), .outside(let path), .wrongType(let path, _, _), .hardLinked(let path, _),
            .insecure(let path, _), .system(let path, _, _):
            return path
        }
    }

    public var description: String {
        let shown = Printable.path(path)
        switch self {
        case .symbolicLink:
            return "\(shown) is a symbolic link or lies below one; links inside the data root are never followed"
        case .outside:
            return "\(shown) would lead outside its directory"
        case .wrongType(_, let found, let expected):
            return "\(shown) is \(found.withArticle), where \(expected.withArticle) belongs"
        case .hardLinked(_, let links):
            return "\(shown) has \(links) hard links; jobrun writes only files with one"
        case .insecure(_, let reason):
            return "\(shown) is unsafe: \(reason)"
        case .system(_, let operation, let code):
            return "cannot \(operation) \(shown): \(Printable.errno(code))"
        }
    }
}

/// The type of a file system object, as `fstat` reports it.
public enum FileKind: Sendable, Equatable {
    case regular, directory, symbolicLink, fifo, socket, characterDevice, blockDevice, unknown

    public init(mode: mode_t) {
        switch mode & S_IFMT {
        case S_IFREG: self = .regular
        case S_IFDIR: self = .directory
        case S_IFLNK: self = .symbolicLink
        case S_IFIFO: self = .fifo
        case S_IFSOCK: self = .socket
        case S_IFCHR: self = .characterDevice
        case S_IFBLK: self = .blockDevice
        default: self = .unknown
        }
    }

    var withArticle: String {
        switch self {
        case .regular: return "a regular file"
        case .directory: return "a directory"
        case .symbolicLink: return "a symbolic link"
        case .fifo: return "a FIFO"
        case .socket: return "a socket"
        case .characterDevice: return "a character device"
        case .blockDevice: return "a block device"
        case .unknown: return "a file of unknown type"
        }
    }
}
