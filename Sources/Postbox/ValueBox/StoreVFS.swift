import CSQLite
import ConfinedFiles

#if canImport(Glibc)
    import Glibc
#endif

/// The SQLite VFS every store opens its files through, registered as `jobrun` on top of the
/// system SQLite's `unix` VFS.
///
/// - Opening: the database, its WAL, its shared memory and its journal are each opened first by
///   `ConfinedDirectory` in the database's folder (no link followed, no FIFO or device, no
///   hard-linked file written, nothing writable by others), then by the unix VFS, which must
///   reach the same inode, or the file is refused. A refusal names the file.
/// - Encryption (a connection opened with a key): every page of the database file and every
///   page image in the WAL is encrypted in SQLCipher 4's format (`PageCipher`) on its way to
///   the disk and authenticated and decrypted on its way back; SQLite above sees plain pages.
///   The WAL's frame headers stay in clear and their checksums cover the ciphertext on disk,
///   as SQLCipher writes them (`WALFrames`). A checkpoint copies the WAL's ciphertext into the
///   database file as it is (`CheckpointCopy`). Memory-mapped reads are off for such files, and
///   a rollback journal is never given a page.
///
/// A file is laid out as this VFS's header (SQLite's methods pointer, then the file's state)
/// followed by the unix VFS's file.
enum StoreVFS {
    static let name = "jobrun"
    /// The URI parameter naming the connection's `StoreConnection`.
    static let connectionParameter = "jobrun_connection"
    /// Bytes before the unix VFS's file.
    static let headerSize = 16
    // SQLite's extended result codes, macros Swift does not import.
    /// `SQLITE_IOERR_READ`.
    static let readError = SQLITE_IOERR | (1 << 8)
    /// `SQLITE_IOERR_SHORT_READ`: a read past the end of the file (the rest zero-filled).
    static let shortRead = SQLITE_IOERR | (2 << 8)
    /// `SQLITE_IOERR_WRITE`.
    static let writeError = SQLITE_IOERR | (3 << 8)
    /// `SQLITE_IOERR_SHMOPEN`.
    static let sharedMemoryError = SQLITE_IOERR | (18 << 8)
    /// `SQLITE_IOERR_AUTH`: a page failed authentication.
    static let authenticationError = SQLITE_IOERR | (28 << 8)

    /// Registers the VFS once per process (not as the default one).
    static let registered: Bool = {
        guard let unix = sqlite3_vfs_find("unix") else { return false }
        let vfs = UnsafeMutablePointer<sqlite3_vfs>.allocate(capacity: 1)
        vfs.initialize(to: unix.pointee)
        vfs.pointee.pNext = nil
        vfs.pointee.zName = UnsafePointer(strdup(name))
        vfs.pointee.szOsFile = unix.pointee.szOsFile + Int32(headerSize)
        vfs.pointee.xOpen = storeOpen
        vfs.pointee.xFullPathname = storeFullPathname
        return sqlite3_vfs_register(vfs, 0) == SQLITE_OK
    }()

    nonisolated(unsafe) static let unix: UnsafeMutablePointer<sqlite3_vfs> = sqlite3_vfs_find("unix")!

    /// Methods of a file in clear and of an encrypted one (version 2: no memory-mapped reads,
    /// which would hand SQLite the ciphertext).
    nonisolated(unsafe) static let plainMethods = makeMethods(version: 3)
    nonisolated(unsafe) static let encryptedMethods = makeMethods(version: 2)

    static func state(_ file: UnsafeMutablePointer<sqlite3_file>?) -> StoreFileState {
        let raw = UnsafeMutableRawPointer(file!).load(fromByteOffset: 8, as: UnsafeMutableRawPointer.self)
        return Unmanaged<StoreFileState>.fromOpaque(raw).takeUnretainedValue()
    }

    static func realFile(_ file: UnsafeMutablePointer<sqlite3_file>) -> UnsafeMutablePointer<sqlite3_file> {
        (UnsafeMutableRawPointer(file) + headerSize).assumingMemoryBound(to: sqlite3_file.self)
    }

    private static func makeMethods(version: Int32) -> UnsafeMutablePointer<sqlite3_io_methods> {
        let methods = UnsafeMutablePointer<sqlite3_io_methods>.allocate(capacity: 1)
        methods.initialize(to: sqlite3_io_methods())
        methods.pointee.iVersion = version
        methods.pointee.xClose = { file in
            let state = StoreVFS.state(file)
            let rc = state.close()
            UnsafeMutableRawPointer(file!).storeBytes(of: nil, toByteOffset: 8, as: UnsafeMutableRawPointer?.self)
            Unmanaged.passUnretained(state).release()
            return rc
        }
        methods.pointee.xRead = { file, buffer, amount, offset in StoreVFS.state(file).read(buffer!, Int(amount), offset) }
        methods.pointee.xWrite = { file, buffer, amount, offset in StoreVFS.state(file).write(buffer!, Int(amount), offset) }
        methods.pointee.xTruncate = { file, size in StoreVFS.state(file).forward { $0.pointee.pMethods.pointee.xTruncate($0, size) } }
        methods.pointee.xSync = { file, flags in StoreVFS.state(file).forward { $0.pointee.pMethods.pointee.xSync($0, flags) } }
        methods.pointee.xFileSize = { file, size in StoreVFS.state(file).forward { $0.pointee.pMethods.pointee.xFileSize($0, size) } }
        methods.pointee.xLock = { file, lock in StoreVFS.state(file).forward { $0.pointee.pMethods.pointee.xLock($0, lock) } }
        methods.pointee.xUnlock = { file, lock in StoreVFS.state(file).forward { $0.pointee.pMethods.pointee.xUnlock($0, lock) } }
        methods.pointee.xCheckReservedLock = { file, out in StoreVFS.state(file).forward { $0.pointee.pMethods.pointee.xCheckReservedLock($0, out) } }
        methods.pointee.xFileControl = { file, op, arg in
            let state = StoreVFS.state(file)
            if op == SQLITE_FCNTL_CKPT_START || op == SQLITE_FCNTL_CKPT_DONE, state.kind == .main, let copy = state.connection?.checkpointCopy {
                copy.set(copying: op == SQLITE_FCNTL_CKPT_START)
            }
            return state.forward { $0.pointee.pMethods.pointee.xFileControl($0, op, arg) }
        }
        methods.pointee.xSectorSize = { file in StoreVFS.state(file).forward { $0.pointee.pMethods.pointee.xSectorSize($0) } }
        methods.pointee.xDeviceCharacteristics = { file in StoreVFS.state(file).forward { $0.pointee.pMethods.pointee.xDeviceCharacteristics($0) } }
        methods.pointee.xShmMap = { file, region, size, extend, out in StoreVFS.state(file).shmMap(region, size, extend, out) }
        methods.pointee.xShmLock = { file, offset, n, flags in StoreVFS.state(file).forward { $0.pointee.pMethods.pointee.xShmLock($0, offset, n, flags) } }
        methods.pointee.xShmBarrier = { file in
            let real = StoreVFS.realFile(file!)
            real.pointee.pMethods.pointee.xShmBarrier(real)
        }
        methods.pointee.xShmUnmap = { file, delete in StoreVFS.state(file).forward { $0.pointee.pMethods.pointee.xShmUnmap($0, delete) } }
        if version >= 3 {
            methods.pointee.xFetch = { file, offset, amount, out in StoreVFS.state(file).forward { $0.pointee.pMethods.pointee.xFetch($0, offset, amount, out) }
            }
            methods.pointee.xUnfetch = { file, offset, pointer in StoreVFS.state(file).forward { $0.pointee.pMethods.pointee.xUnfetch($0, offset, pointer) } }
        }
        return methods
    }
}

/// `xFullPathname`: the name made absolute, without resolving links (the unix VFS's own
/// resolves them, which would open a link's target under the target's name).
private func storeFullPathname(_ vfs: UnsafeMutablePointer<sqlite3_vfs>?, _ name: UnsafePointer<CChar>?, _ size: Int32, _ out: UnsafeMutablePointer<CChar>?)
    -> Int32
{
    guard let name, let out else { return SQLITE_CANTOPEN }
    var full = String(cString: name)
    if !full.hasPrefix("/") {
        var cwd = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&cwd, cwd.count) != nil else { return SQLITE_CANTOPEN }
        full = String(decoding: cwd.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/" + full
    }
    let bytes = Array(full.utf8)
    guard bytes.count < Int(size) else { return SQLITE_CANTOPEN }
    bytes.withUnsafeBytes { UnsafeMutableRawPointer(out).copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
    out[bytes.count] = 0
    return SQLITE_OK
}

/// `xOpen`: checks the file with `ConfinedDirectory`, opens it with the unix VFS, and checks
/// that both opens reached the same file.
private func storeOpen(
    _ vfs: UnsafeMutablePointer<sqlite3_vfs>?, _ name: sqlite3_filename?, _ file: UnsafeMutablePointer<sqlite3_file>?, _ flags: Int32,
    _ outFlags: UnsafeMutablePointer<Int32>?
) -> Int32 {
    guard let file else { return SQLITE_CANTOPEN }
    UnsafeMutableRawPointer(file).storeBytes(of: nil, toByteOffset: 0, as: UnsafeRawPointer?.self)
    let real = StoreVFS.realFile(file)
    let unix = StoreVFS.unix
    guard let name else {
        // A temporary file (no name): nothing to confine, never a store's page at rest.
        let rc = unix.pointee.xOpen(unix, nil, real, flags, outFlags)
        guard rc == SQLITE_OK else { return rc }
        return StoreFileState.install(file, StoreFileState(kind: .other, connection: nil, path: "", real: real), encrypted: false)
    }
    let path = String(cString: name)
    let connection = sqlite3_uri_parameter(name, StoreVFS.connectionParameter).flatMap { StoreConnection.find(String(cString: $0)) }
    let kind: StoreFileState.Kind
    if flags & SQLITE_OPEN_MAIN_DB != 0 {
        kind = .main
    } else if flags & SQLITE_OPEN_WAL != 0 {
        kind = .wal
    } else if flags & (SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_SUPER_JOURNAL) != 0 {
        kind = .journal
    } else {
        kind = .other
    }
    let policy = connection?.policy ?? ConfinementPolicy()
    let writes = flags & SQLITE_OPEN_READWRITE != 0
    let access: FileAccess = !writes ? .read : (flags & SQLITE_OPEN_CREATE != 0 ? .readWriteCreating : .readWrite)
    var checked: Int32?
    do {
        checked = try StoreFile.open(path, access, policy: policy)
        if checked == nil { return SQLITE_CANTOPEN }
    } catch {
        connection?.refusal = error
        return SQLITE_CANTOPEN
    }
    defer { if let checked { Glibc.close(checked) } }
    let rc = unix.pointee.xOpen(unix, name, real, flags | SQLITE_OPEN_NOFOLLOW, outFlags)
    guard rc == SQLITE_OK else { return rc }
    // The unix VFS's file starts with its methods, its VFS and its inode record, then its
    // descriptor: it must be the very file that was checked.
    let descriptor = UnsafeMutableRawPointer(real).load(fromByteOffset: 24, as: Int32.self)
    var opened = stat()
    var expected = stat()
    guard let checked, fstat(descriptor, &opened) == 0, fstat(checked, &expected) == 0, opened.st_dev == expected.st_dev, opened.st_ino == expected.st_ino
    else {
        _ = real.pointee.pMethods.pointee.xClose(real)
        connection?.refusal = .unsafeFile(path: path, reason: "\(Printable.path(path)) changed while it was being opened; refusing it")
        return SQLITE_CANTOPEN
    }
    let encrypted = connection?.cipher != nil && kind != .other
    let state = StoreFileState(kind: kind, connection: connection, path: path, real: real)
    if kind == .main { connection?.mainFile = real }
    return StoreFileState.install(file, state, encrypted: encrypted)
}
