import ConfinedFiles

#if canImport(Glibc)
    import Glibc
#endif

extension SqliteValueBox {
    /// SQLite's file header, which a store in clear starts with; an encrypted store starts with
    /// its random salt instead.
    static let plainHeader = Array("SQLite format 3\0".utf8)

    /// What a store file's first bytes say it is.
    enum FileFormat: Equatable {
        /// No file, or an empty one: a new store.
        case none
        case plain
        case encrypted
        /// Neither SQLite's header nor an encrypted store's whole pages.
        case foreign
    }

    /// Decides from the first bytes and the size alone, without a key: SQLite's header means
    /// clear; anything else filling whole pages of at least 4 KiB is taken as encrypted.
    static func fileFormat(path: String, policy: ConfinementPolicy) throws(PostboxError) -> FileFormat {
        guard let fd = try StoreFile.open(path, .read, policy: policy) else { return .none }
        defer { Glibc.close(fd) }
        var header = [UInt8](repeating: 0, count: 16)
        let got = header.withUnsafeMutableBytes { StoreFile.read(fd, into: $0, at: 0) }
        if got == 0 { return .none }
        if got == 16 && header == plainHeader { return .plain }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .foreign }
        return st.st_size >= 4096 && st.st_size % 512 == 0 ? .encrypted : .foreign
    }

    /// Whether the store at `path` is encrypted, decided from its header without a key: nil
    /// when there is no file (or an empty one), false for SQLite's own header, true for an
    /// encrypted store. A file that is neither is refused (`notADatabase`), and so is one that
    /// is not safe to open (`unsafeFile`).
    public static func isEncrypted(path: String) throws -> Bool? {
        switch try fileFormat(path: path, policy: ConfinementPolicy()) {
        case .none: return nil
        case .plain: return false
        case .encrypted: return true
        case .foreign: throw PostboxError.notADatabase(path: path)
        }
    }

    /// Refuses `key` (`wrongKey`) unless it authenticates the database file's first page,
    /// before SQLite reads anything.
    static func checkKey(_ key: StoreKey, path: String, policy: ConfinementPolicy) throws {
        guard let fd = try StoreFile.open(path, .read, policy: policy) else { return }
        defer { Glibc.close(fd) }
        let disk = UnsafeMutableRawBufferPointer.allocate(byteCount: PageCipher.pageSize, alignment: 16)
        let plain = UnsafeMutableRawBufferPointer.allocate(byteCount: PageCipher.pageSize, alignment: 16)
        defer {
            disk.deallocate()
            plain.initializeMemory(as: UInt8.self, repeating: 0)
            plain.deallocate()
        }
        guard StoreFile.read(fd, into: disk, at: 0) == PageCipher.pageSize,
            PageCipher(key: key).decrypt(page: 1, disk: disk.baseAddress!, into: plain.baseAddress!)
        else { throw PostboxError.wrongKey(path: path) }
    }
}
