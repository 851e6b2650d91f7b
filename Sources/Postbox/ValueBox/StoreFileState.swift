import CSQLite
import ConfinedFiles

#if canImport(Glibc)
    import Glibc
#endif

/// One file opened through `StoreVFS`: the unix VFS's file it wraps, and for an encrypted
/// connection's database and WAL, the work buffers its pages pass through (allocated once).
final class StoreFileState {
    enum Kind { case main, wal, journal, other }

    let kind: Kind
    let connection: StoreConnection?
    let path: String
    let real: UnsafeMutablePointer<sqlite3_file>
    let cipher: PageCipher?
    /// A frame's bytes on disk (header and page), or a database page's.
    let disk: UnsafeMutableRawPointer
    /// A page in clear, for reads that want part of a page and for the WAL's checksums.
    let plain: UnsafeMutableRawPointer
    var wal: WALFrames?
    private var shmChecked = false

    static let frameSize = WALFrames.headerSize + PageCipher.pageSize

    init(kind: Kind, connection: StoreConnection?, path: String, real: UnsafeMutablePointer<sqlite3_file>) {
        self.kind = kind
        self.connection = connection
        self.path = path
        self.real = real
        self.cipher = kind == .main || kind == .wal || kind == .journal ? connection?.cipher : nil
        let buffers = cipher == nil ? 0 : Self.frameSize
        disk = UnsafeMutableRawPointer.allocate(byteCount: max(buffers, 1), alignment: 16)
        plain = UnsafeMutableRawPointer.allocate(byteCount: max(buffers, 1), alignment: 16)
        if cipher != nil && kind == .wal { wal = WALFrames() }
    }

    deinit {
        disk.deallocate()
        plain.deallocate()
    }

    /// Hands `state` to SQLite's `file` (which keeps it until `xClose`).
    static func install(_ file: UnsafeMutablePointer<sqlite3_file>, _ state: StoreFileState, encrypted: Bool) -> Int32 {
        let raw = UnsafeMutableRawPointer(file)
        raw.storeBytes(of: Unmanaged.passRetained(state).toOpaque(), toByteOffset: 8, as: UnsafeMutableRawPointer.self)
        raw.storeBytes(of: UnsafeRawPointer(encrypted ? StoreVFS.encryptedMethods : StoreVFS.plainMethods), toByteOffset: 0, as: UnsafeRawPointer.self)
        return SQLITE_OK
    }

    /// Runs one of the unix file's methods, after any WAL frame header still held back.
    @inline(__always)
    func forward(_ call: (UnsafeMutablePointer<sqlite3_file>) -> Int32) -> Int32 {
        if wal?.pendingFrame != nil {
            let rc = flushPendingHeader()
            if rc != SQLITE_OK { return rc }
        }
        return call(real)
    }

    func close() -> Int32 {
        if wal?.pendingFrame != nil { _ = flushPendingHeader() }
        if kind == .main, connection?.mainFile == real { connection?.mainFile = nil }
        return real.pointee.pMethods.pointee.xClose(real)
    }

    // MARK: Raw access to the unix file

    @inline(__always)
    func readReal(_ buffer: UnsafeMutableRawPointer, _ amount: Int, _ offset: Int64) -> Int32 {
        real.pointee.pMethods.pointee.xRead(real, buffer, Int32(amount), offset)
    }

    @inline(__always)
    func writeReal(_ buffer: UnsafeRawPointer, _ amount: Int, _ offset: Int64) -> Int32 {
        real.pointee.pMethods.pointee.xWrite(real, buffer, Int32(amount), offset)
    }

    // MARK: Reads and writes

    func read(_ buffer: UnsafeMutableRawPointer, _ amount: Int, _ offset: Int64) -> Int32 {
        guard let cipher else { return readReal(buffer, amount, offset) }
        switch kind {
        case .main: return readDatabase(cipher, buffer, amount, offset)
        case .wal: return readWAL(cipher, buffer, amount, offset)
        case .journal, .other: return readReal(buffer, amount, offset)
        }
    }

    func write(_ buffer: UnsafeRawPointer, _ amount: Int, _ offset: Int64) -> Int32 {
        guard let cipher else { return writeReal(buffer, amount, offset) }
        switch kind {
        case .main: return writeDatabase(cipher, buffer, amount, offset)
        case .wal: return writeWAL(cipher, buffer, amount, offset)
        case .journal:
            // A rollback journal's records (page number, page, checksum) hold whole pages in
            // clear: an encrypted store runs in WAL mode, whose one journaled change (creating
            // the file) journals none, and any other is refused.
            return amount == PageCipher.pageSize && offset % 8 == 4 ? StoreVFS.writeError : writeReal(buffer, amount, offset)
        case .other: return writeReal(buffer, amount, offset)
        }
    }

    /// Reads any range of the database: each page it touches is read whole, authenticated and
    /// decrypted (straight into `buffer` when the read is that page).
    private func readDatabase(_ cipher: PageCipher, _ buffer: UnsafeMutableRawPointer, _ amount: Int, _ offset: Int64) -> Int32 {
        let size = Int64(PageCipher.pageSize)
        var done = 0
        var result = SQLITE_OK
        while done < amount {
            let position = offset + Int64(done)
            let index = position / size
            let within = Int(position % size)
            let count = min(PageCipher.pageSize - within, amount - done)
            let rc = readReal(disk, PageCipher.pageSize, index * size)
            if rc == StoreVFS.shortRead && isZero(disk, PageCipher.pageSize) {
                // Beyond the end of the file: SQLite takes the zeros.
                (buffer + done).initializeMemory(as: UInt8.self, repeating: 0, count: amount - done)
                return StoreVFS.shortRead
            }
            if rc != SQLITE_OK && rc != StoreVFS.shortRead { return rc }
            let whole = within == 0 && count == PageCipher.pageSize
            let target = whole ? buffer + done : plain
            guard rc == SQLITE_OK, authenticate(cipher, page: UInt32(index + 1), disk: disk, into: target, file: path) else {
                buffer.initializeMemory(as: UInt8.self, repeating: 0, count: amount)
                return StoreVFS.authenticationError
            }
            if !whole { (buffer + done).copyMemory(from: plain + within, byteCount: count) }
            done += count
            result = SQLITE_OK
        }
        return result
    }

    /// Writes whole pages of the database, each encrypted with a fresh IV, or, while a
    /// checkpoint copies the WAL, as the ciphertext of the frame it read (`CheckpointCopy`).
    private func writeDatabase(_ cipher: PageCipher, _ buffer: UnsafeRawPointer, _ amount: Int, _ offset: Int64) -> Int32 {
        let size = PageCipher.pageSize
        guard offset % Int64(size) == 0, amount % size == 0 else { return StoreVFS.writeError }
        var done = 0
        while done < amount {
            let page = UInt32((offset + Int64(done)) / Int64(size) + 1)
            let rc: Int32
            if let copy = connection?.checkpointCopy, copy.copying {
                guard let copied = copy.ciphertext(page: page, buffer: buffer + done) else { return StoreVFS.writeError }
                rc = writeReal(copied, size, offset + Int64(done))
            } else {
                guard prepareSalt(cipher, writingPage: page), cipher.encrypt(page: page, plain: buffer + done, into: disk) else { return StoreVFS.writeError }
                rc = writeReal(disk, size, offset + Int64(done))
            }
            if rc != SQLITE_OK { return rc }
            done += size
        }
        return SQLITE_OK
    }

    /// Decrypts `page`; on failure records which page of which file failed.
    func authenticate(_ cipher: PageCipher, page: UInt32, disk: UnsafeRawPointer, into out: UnsafeMutableRawPointer, file: String) -> Bool {
        if page != 1 && !cipher.hasSalt { _ = loadSalt(cipher) }
        guard cipher.decrypt(page: page, disk: disk, into: out) else {
            connection?.failedPage = (file, Int64(page))
            return false
        }
        connection?.authenticated = true
        return true
    }

    /// Makes sure the cipher knows the file's salt before a page is written: the one in the
    /// database file, or a new random one for a file not written yet.
    func prepareSalt(_ cipher: PageCipher, writingPage page: UInt32) -> Bool {
        if cipher.hasSalt { return true }
        if loadSalt(cipher) { return true }
        cipher.useRandomSalt()
        return true
    }

    /// Reads the salt from the start of the database file; false when the file is empty.
    @discardableResult
    func loadSalt(_ cipher: PageCipher) -> Bool {
        guard let main = connection?.mainFile else { return false }
        var salt = [UInt8](repeating: 0, count: PageCipher.saltSize)
        let rc = salt.withUnsafeMutableBytes { main.pointee.pMethods.pointee.xRead(main, $0.baseAddress!, Int32(PageCipher.saltSize), 0) }
        guard rc == SQLITE_OK else { return false }
        salt.withUnsafeBytes { cipher.use(salt: $0.baseAddress!) }
        return true
    }

    private func isZero(_ p: UnsafeRawPointer, _ count: Int) -> Bool {
        UnsafeRawBufferPointer(start: p, count: count).allSatisfy { $0 == 0 }
    }

    // MARK: Shared memory

    /// Checks the `-shm` file before the unix VFS first opens it (it does so by name, with
    /// `O_NOFOLLOW`, when SQLite first maps it).
    func shmMap(_ region: Int32, _ size: Int32, _ extend: Int32, _ out: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> Int32 {
        if !shmChecked {
            do {
                if let fd = try StoreFile.open(path + "-shm", .readWriteCreating, policy: connection?.policy ?? ConfinementPolicy()) { Glibc.close(fd) }
                shmChecked = true
            } catch {
                connection?.refusal = error
                return StoreVFS.sharedMemoryError
            }
        }
        return real.pointee.pMethods.pointee.xShmMap(real, region, size, extend, out)
    }
}
