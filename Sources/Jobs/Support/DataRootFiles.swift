import ConfinedFiles
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Files opened relative to a directory of the data root that a caller already holds by
/// descriptor: through `ConfinedDirectory`, so a link, FIFO, device or (when writing) a
/// hard-linked file at the name is refused at once, with the root's policy on modes and owners.
extension DataRoot {
    /// Opens `name` in the directory `dirFD` (whose path is `directoryPath`). The caller closes
    /// the returned descriptor; `dirFD` stays the caller's.
    public static func openFile(
        _ name: String, in dirFD: Int32, directoryPath: String, _ access: FileAccess, mode: mode_t = 0o600
    ) throws(DataRootError) -> Int32 {
        let directory = try confined(dirFD, path: directoryPath)
        do throws(ConfinedFileError) { return try directory.openFile(name, access, mode: mode) } catch { throw DataRootError(error) }
    }

    /// Like `openFile`, but nil when nothing has that name.
    public static func openFileIfExists(
        _ name: String, in dirFD: Int32, directoryPath: String, _ access: FileAccess
    ) throws(DataRootError) -> Int32? {
        let directory = try confined(dirFD, path: directoryPath)
        do throws(ConfinedFileError) { return try directory.openFileIfExists(name, access) } catch { throw DataRootError(error) }
    }

    /// A `ConfinedDirectory` over a duplicate of `dirFD`, with the root's policy.
    static func confined(_ dirFD: Int32, path: String) throws(DataRootError) -> ConfinedDirectory {
        let copy = dup(dirFD)
        guard copy >= 0 else { throw .cannotCreate(path: path, errno: errno, holder: nil) }
        return ConfinedDirectory(adopting: copy, path: path, policy: ConfinementPolicy(allowInsecure: allowsInsecure))
    }
}
