import ConfinedFiles
import Foundation

/// Reads small files whole (job files, configuration, credentials, metrics files): one `fstat`
/// and usually one `read`, with no buffer zeroed first and no Foundation file handle, whose
/// first use is a measurable part of a cron run.
enum SmallFile {
    /// Why a small file was not read: the reason only, never its contents.
    enum Problem: Error, Equatable {
        case unreadable(errno: Int32)
        case directory
        case notRegular
        /// Over the limit, by `fstat`'s size or (`size` nil) by what a read returned.
        case tooLarge(size: Int64?, limit: Int)
        /// Refused below the data root: a link, a FIFO, an unsafe mode (`ConfinedFileError`).
        case refused(ConfinedFileError)

        var message: String {
            switch self {
            case .unreadable(let code): return StorageFailure.describe(errno: code)
            case .directory: return "it is a directory, not a file"
            case .notRegular: return "it is not a regular file"
            case .tooLarge(let size?, let limit): return "it is \(size) bytes; at most \(limit) are read"
            case .tooLarge(nil, let limit): return "it grew past \(limit) bytes while being read"
            case .refused(let error): return error.description
            }
        }
    }

    /// The regular file at `path`, if it holds at most `limit` bytes.
    static func read(_ path: String, limit: Int) -> Result<[UInt8], Problem> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return .failure(.unreadable(errno: errno)) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .failure(.unreadable(errno: errno)) }
        if (st.st_mode & S_IFMT) == S_IFDIR { return .failure(.directory) }
        guard (st.st_mode & S_IFMT) == S_IFREG else { return .failure(.notRegular) }
        guard st.st_size <= limit else { return .failure(.tooLarge(size: Int64(st.st_size), limit: limit)) }
        return read(descriptor: fd, limit: limit, expectedSize: Int(st.st_size))
    }

    /// The regular file `relative` beneath `directory` (no link followed, no FIFO opened), if it
    /// holds at most `limit` bytes; `.unreadable(ENOENT)` when there is none.
    static func read(_ relative: String, in directory: ConfinedDirectory, limit: Int) -> Result<[UInt8], Problem> {
        let fd: Int32
        do { fd = try directory.openFile(relative, .read) } catch {
            if case .system(_, _, let code) = error { return .failure(.unreadable(errno: code)) }
            return .failure(.refused(error))
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .failure(.unreadable(errno: errno)) }
        guard st.st_size <= limit else { return .failure(.tooLarge(size: Int64(st.st_size), limit: limit)) }
        return read(descriptor: fd, limit: limit, expectedSize: Int(st.st_size))
    }

    /// At most `limit` bytes of the open `fd` from its offset; more than that is `.tooLarge`.
    static func read(descriptor fd: Int32, limit: Int, expectedSize: Int? = nil) -> Result<[UInt8], Problem> {
        ConfinedDirectory.readAll(descriptor: fd, limit: limit, expectedSize: expectedSize).mapError { failure in
            switch failure {
            case .errno(let code): return .unreadable(errno: code)
            case .tooLarge: return .tooLarge(size: nil, limit: limit)
            }
        }
    }
}
