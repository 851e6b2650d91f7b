import Foundation
import Postbox

/// How the read-only commands (`status`, `stats`) open what a data root holds.
public enum StoreReading {
    /// Why `root` cannot be read at all (it does not exist, or is not a directory), or nil.
    public static func missingRoot(_ root: DataRoot) -> String? {
        var st = stat()
        guard stat(root.path, &st) == 0 else {
            return "no data root at \(root.path): \(StorageFailure.describe(errno: errno)) (give --root or set \(DataRoot.environmentVariable))"
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { return "\(root.path) is not a directory (give --root the data root)" }
        return nil
    }

    /// Opens the Postbox at `path` read-only. A WAL database needs its `-shm` file; when the
    /// directory cannot take it (a read-only file system or a directory nobody may write), the
    /// store is opened as immutable instead: nothing can be writing it then.
    public static func openPostbox(_ path: String) throws -> Postbox {
        do {
            return try Postbox(path: path, readOnly: true)
        } catch {
            guard directoryIsFrozen((path as NSString).deletingLastPathComponent) else { throw error }
            return try Postbox(path: path, readOnly: true, immutable: true)
        }
    }

    /// True when nobody can create files in `directory`: a read-only mount, or no write bit at all.
    static func directoryIsFrozen(_ directory: String) -> Bool {
        var fs = statvfs()
        if statvfs(directory, &fs) == 0, fs.f_flag & UInt(ST_RDONLY) != 0 { return true }
        var st = stat()
        return stat(directory, &st) == 0 && st.st_mode & 0o222 == 0
    }
}
