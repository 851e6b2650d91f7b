import ConfinedFiles
import Foundation
import MediaBox
import Postbox

#if canImport(Glibc)
    import Glibc
#endif

/// Turns what the file system, Postbox and MediaBox throw into a `JobError` with a sysexits
/// code and a message naming the path and the reason — never a raw Foundation domain string.
///
/// | Cause | Exit |
/// |---|---|
/// | no permission, read-only file system, not a directory, cannot open a store | 73 |
/// | disk full, over quota, I/O error, damaged store | 74 |
/// | a store locked by another process past the busy timeout | 75 |
/// | an unsafe root, a store from a newer jobrun | 78 |
public enum StorageFailure {
    /// `error` as a `JobError`; `doing` says what was attempted ("cannot open the stores of
    /// account 0"). A `JobError` passes through unchanged.
    public static func jobError(_ error: any Error, doing: String) -> JobError {
        if let e = error as? JobError { return e }
        let (code, reason) = classify(error)
        return JobError("\(doing): \(reason)", exitCode: code, retryable: code == .temporary)
    }

    /// The exit code and a one-line reason (with the path) for `error`; `.jobFailed` and the
    /// error's description when it is not a storage error.
    public static func classify(_ error: any Error) -> (JobExitCode, String) {
        switch error {
        case let e as JobError:
            return (e.exitCode, e.message)
        case let e as DataRootError:
            return (e.exitCode, e.description)
        case let e as ConfinedFileError:
            let rooted = DataRootError(e)
            return (rooted.exitCode, rooted.description)
        case let e as MetricsWriteError:
            return (exitCode(errno: e.errno), e.description)
        case let e as PostboxError:
            return (exitCode(postbox: e), e.description)
        case let e as MediaBoxError:
            if case let .io(_, _, code) = e { return (exitCode(errno: code), e.description) }
            return (.jobFailed, e.description)
        case let e as POSIXError:
            let path =
                (e.userInfo[NSFilePathErrorKey] as? String) ?? ((e as NSError).userInfo[NSFilePathErrorKey] as? String)
                ?? (e.userInfo[NSURLErrorKey] as? URL)?.path
            return (exitCode(errno: e.code.rawValue), (path.map { "\($0): " } ?? "") + describe(errno: e.code.rawValue))
        case let e as CocoaError:
            let path = e.filePath ?? e.url?.path
            let code = underlyingErrno(e) ?? cocoaErrno(e)
            let reason =
                code.map(describe(errno:))
                ?? "\(e.code.rawValue == CocoaError.fileWriteFileExists.rawValue ? "exists and is not a directory" : "file system error")"
            return (code.map(exitCode(errno:)) ?? .cannotCreate, (path.map { "\($0): " } ?? "") + reason)
        default:
            let ns = error as NSError
            if ns.domain == NSPOSIXErrorDomain {
                let path = ns.userInfo[NSFilePathErrorKey] as? String
                return (exitCode(errno: Int32(ns.code)), (path.map { "\($0): " } ?? "") + describe(errno: Int32(ns.code)))
            }
            return (.jobFailed, "\(error)")
        }
    }

    /// Whether `error` is a storage failure (the disk or a store), as opposed to a job's own.
    public static func isStorage(_ error: any Error) -> Bool {
        switch error {
        case is DataRootError, is ConfinedFileError, is PostboxError, is POSIXError, is CocoaError: return true
        case let e as MediaBoxError: if case .io = e { return true } else { return false }
        default: return (error as NSError).domain == NSPOSIXErrorDomain
        }
    }

    /// 74 for a full or failing disk, 73 for a path that cannot be created or written.
    public static func exitCode(errno e: Int32) -> JobExitCode {
        switch e {
        case ENOSPC, EDQUOT, EIO, EFBIG, ENOMEM: return .ioError
        case EAGAIN, EWOULDBLOCK, EBUSY: return .temporary
        default: return .cannotCreate
        }
    }

    static func exitCode(postbox e: PostboxError) -> JobExitCode {
        switch e {
        case .busy: return .temporary
        case .readOnly: return .cannotCreate
        case .schemaTooNew: return .config
        case .notADatabase, .corrupt, .decoding, .walUnreadable, .pageAuthenticationFailed: return .ioError
        case .keyRequired, .notEncrypted, .wrongKey, .invalidKey, .unsafeFile: return .config
        case .transactionFinished: return .jobFailed
        case .server(_, let code, _):
            // SQLSTATE classes: 08 connection, 40 rollback (serialization, deadlock), 53
            // insufficient resources, 55P03 lock not available, 57P0x server shutting down.
            if code.hasPrefix("08") || code.hasPrefix("40") || code.hasPrefix("53") || code == "55P03" || code.hasPrefix("57P") {
                return .temporary
            }
            if code.hasPrefix("28") || code.hasPrefix("42501") { return .cannotCreate }
            return .ioError
        case .sqlite(_, let code, _):
            switch code & 0xff {
            case 13 /* SQLITE_FULL */, 10 /* SQLITE_IOERR */: return .ioError
            case 5 /* SQLITE_BUSY */, 6 /* SQLITE_LOCKED */: return .temporary
            case 8 /* SQLITE_READONLY */, 14 /* SQLITE_CANTOPEN */, 3 /* SQLITE_PERM */, 23 /* SQLITE_AUTH */: return .cannotCreate
            default: return .ioError
            }
        }
    }

    /// `No space left on device (ENOSPC)`.
    public static func describe(errno e: Int32) -> String {
        let names: [Int32: String] = [
            ENOSPC: "ENOSPC", EDQUOT: "EDQUOT", EIO: "EIO", EACCES: "EACCES", EPERM: "EPERM", EROFS: "EROFS",
            ENOTDIR: "ENOTDIR", EEXIST: "EEXIST", ELOOP: "ELOOP", ENOENT: "ENOENT", EISDIR: "EISDIR", EFBIG: "EFBIG",
        ]
        return String(cString: strerror(e)) + (names[e].map { " (\($0))" } ?? " (errno \(e))")
    }

    private static func underlyingErrno(_ e: CocoaError) -> Int32? {
        guard let underlying = e.userInfo[NSUnderlyingErrorKey] as? NSError else { return nil }
        if underlying.domain == NSPOSIXErrorDomain { return Int32(underlying.code) }
        if let posix = underlying as? POSIXError { return posix.code.rawValue }
        return nil
    }

    private static func cocoaErrno(_ e: CocoaError) -> Int32? {
        switch e.code {
        case .fileWriteOutOfSpace: return ENOSPC
        case .fileWriteVolumeReadOnly: return EROFS
        case .fileWriteNoPermission, .fileReadNoPermission: return EACCES
        case .fileNoSuchFile, .fileReadNoSuchFile: return ENOENT
        case .fileWriteFileExists: return EEXIST
        default: return nil
        }
    }
}
