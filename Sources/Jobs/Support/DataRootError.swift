import ConfinedFiles
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Why the data root (or a directory under it) cannot be used, with the path and the reason an
/// operator needs, and the sysexits code it maps to.
public enum DataRootError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A directory could not be created or opened (`errno`); `holder` describes the nearest
    /// existing directory above it (owner and mode), the usual cause.
    case cannotCreate(path: String, errno: Int32, holder: String?)
    /// Something that should be a directory is a file (or another non-directory).
    case notADirectory(path: String)
    /// Something that should be jobrun's own file (a lock, a log) is a directory, a device….
    case notARegularFile(path: String)
    /// A symbolic link where jobrun expects its own directory or file: never followed.
    case symbolicLink(path: String)
    /// A directory owned by another user, or writable by group or others.
    case insecure(path: String, reason: String)
    /// Something below the root that jobrun may not use as it is: a FIFO, socket or device
    /// where a file belongs, a file with several hard links where jobrun writes, a name that
    /// would lead outside the root (`ConfinedFileError`).
    case unusable(ConfinedFileError)

    /// The refusal of `ConfinedFiles` in the root's terms; `holder` describes the parent when a
    /// directory could not be created.
    public init(_ error: ConfinedFileError, holder: String? = nil) {
        switch error {
        case .symbolicLink(let path): self = .symbolicLink(path: path)
        case .insecure(let path, let reason): self = .insecure(path: path, reason: reason)
        case .wrongType(let path, .regular, .directory): self = .notADirectory(path: path)
        case .system(let path, _, let code): self = .cannotCreate(path: path, errno: code, holder: holder)
        default: self = .unusable(error)
        }
    }

    /// The sysexits code: 73 when the root cannot be created or written, 74 for a full or
    /// failing disk, 78 for an unsafe root.
    public var exitCode: JobExitCode {
        switch self {
        case .cannotCreate(_, let e, _): return StorageFailure.exitCode(errno: e)
        case .notADirectory, .notARegularFile: return .cannotCreate
        case .symbolicLink, .insecure, .unusable: return .config
        }
    }

    public var description: String {
        switch self {
        case let .cannotCreate(path, e, holder):
            return "cannot create or open \(path): \(StorageFailure.describe(errno: e))" + (holder.map { "; \($0)" } ?? "")
        case let .notADirectory(path):
            return "\(path) exists and is not a directory (the data root and its folders must be directories)"
        case let .notARegularFile(path):
            return "\(path) is not a regular file (remove it; jobrun creates it)"
        case let .symbolicLink(path):
            return "\(path) is a symbolic link; jobrun never follows links inside the data root (remove it, or point --root at the real directory)"
        case let .unusable(error):
            return "\(error.description); jobrun refuses to use it (remove it; jobrun creates what it needs)"
        case let .insecure(path, reason):
            return "refusing to use \(path): \(reason); fix it with `chown` / `chmod 700`, or set \(DataRoot.allowInsecureVariable)=1 to accept it"
        }
    }
}
