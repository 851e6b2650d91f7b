import CSQLite

/// How an encrypted store's WAL is kept on disk, in SQLCipher 4's way: the WAL header and each
/// frame's 24-byte header are in clear, each frame's page image is encrypted like a database
/// page, and the frames' running checksums cover the ciphertext, so a SQLCipher tool accepts
/// the frames. SQLite above the VFS sees plain pages, and checksums over those: the VFS
/// replaces the checksums SQLite writes with the ones over the ciphertext, and shows SQLite
/// the ones over the plain pages when it reads frame headers (recovering the WAL index, or
/// rewriting the checksums of frames a transaction overwrote).
struct WALFrames {
    static let fileHeaderSize: Int64 = 32
    static let headerSize = 24

    /// A frame header SQLite wrote, held until its page arrives (then both are written in one
    /// call) or until anything else is done with the file (then its checksum is computed over
    /// the page already on disk).
    var pendingFrame: Int64?
    var pendingHeader = [UInt8](repeating: 0, count: headerSize)
    /// The checksum SQLite expects after frame `frame` (over plain pages), under the WAL
    /// header's salts `salt`, kept so reading frames in order costs one frame each.
    var shown: (frame: Int64, salt: UInt64, checksum: (UInt32, UInt32))?
    /// The WAL header last read (valid while frames carry its salts: a restart changes them),
    /// and the checksum on disk after the last frame this file wrote, so appending a frame
    /// reads nothing back.
    var header: WALHeader?
    var written: (frame: Int64, salt: UInt64, checksum: (UInt32, UInt32))?

    /// The frame (from 1) whose bytes start at or contain `offset`, and the offset within it.
    static func locate(_ offset: Int64) -> (frame: Int64, within: Int) {
        let relative = offset - fileHeaderSize
        let size = Int64(StoreFileState.frameSize)
        return (relative / size + 1, Int(relative % size))
    }

    static func frameOffset(_ frame: Int64) -> Int64 { fileHeaderSize + (frame - 1) * Int64(StoreFileState.frameSize) }

    static func bigEndian32(_ p: UnsafeRawPointer, _ at: Int) -> UInt32 {
        UInt32(bigEndian: p.loadUnaligned(fromByteOffset: at, as: UInt32.self))
    }

    static func putBigEndian32(_ p: UnsafeMutableRawPointer, _ at: Int, _ value: UInt32) {
        p.storeBytes(of: value.bigEndian, toByteOffset: at, as: UInt32.self)
    }

    /// SQLite's WAL checksum (`walChecksumBytes`) of `count` bytes, continuing from `start`:
    /// 32-bit words in the byte order the WAL header's magic number chose.
    static func checksum(_ p: UnsafeRawPointer, _ count: Int, bigEndian: Bool, from start: (UInt32, UInt32)) -> (UInt32, UInt32) {
        var s1 = start.0
        var s2 = start.1
        var i = 0
        while i < count {
            var a = p.loadUnaligned(fromByteOffset: i, as: UInt32.self)
            var b = p.loadUnaligned(fromByteOffset: i + 4, as: UInt32.self)
            if bigEndian {
                a = UInt32(bigEndian: a)
                b = UInt32(bigEndian: b)
            } else {
                a = UInt32(littleEndian: a)
                b = UInt32(littleEndian: b)
            }
            s1 = s1 &+ a &+ s2
            s2 = s2 &+ b &+ s1
            i += 8
        }
        return (s1, s2)
    }
}

/// The WAL header's fields the checksums depend on.
struct WALHeader {
    var bigEndian: Bool
    var salt: UInt64
    var checksum: (UInt32, UInt32)
}

extension StoreFileState {
    /// The WAL header: the one last read when `salt` (a frame header's) is its salt, else read
    /// from disk.
    private func walHeader(salt: UInt64? = nil) -> WALHeader? {
        if let salt, let header = wal?.header, header.salt == salt { return header }
        let header = withUnsafeTemporaryAllocation(byteCount: Int(WALFrames.fileHeaderSize), alignment: 8) { p -> WALHeader? in
            guard readReal(p.baseAddress!, p.count, 0) == SQLITE_OK else { return nil }
            let base = UnsafeRawPointer(p.baseAddress!)
            return WALHeader(
                bigEndian: WALFrames.bigEndian32(base, 0) & 1 == 1,
                salt: UInt64(WALFrames.bigEndian32(base, 16)) << 32 | UInt64(WALFrames.bigEndian32(base, 20)),
                checksum: (WALFrames.bigEndian32(base, 24), WALFrames.bigEndian32(base, 28)))
        }
        wal?.header = header
        return header
    }

    /// The salts a frame header carries.
    private static func salt(ofFrameHeader p: UnsafeRawPointer) -> UInt64 {
        UInt64(WALFrames.bigEndian32(p, 8)) << 32 | UInt64(WALFrames.bigEndian32(p, 12))
    }

    /// The checksum on disk after frame `frame` (the WAL header's for frame 0).
    private func diskChecksum(after frame: Int64, header: WALHeader) -> (UInt32, UInt32)? {
        if frame == 0 { return header.checksum }
        if let written = wal?.written, written.frame == frame, written.salt == header.salt { return written.checksum }
        return withUnsafeTemporaryAllocation(byteCount: 8, alignment: 8) { p -> (UInt32, UInt32)? in
            guard readReal(p.baseAddress!, 8, WALFrames.frameOffset(frame) + 16) == SQLITE_OK else { return nil }
            return (WALFrames.bigEndian32(p.baseAddress!, 0), WALFrames.bigEndian32(p.baseAddress!, 4))
        }
    }

    /// The checksum SQLite computes after frame `frame`, over the plain pages: from the last
    /// one shown when reading in order, else from the WAL's start.
    private func shownChecksum(after frame: Int64, header: WALHeader, cipher: PageCipher) -> (UInt32, UInt32)? {
        if frame == 0 { return header.checksum }
        if let shown = wal?.shown, shown.salt == header.salt, shown.frame == frame { return shown.checksum }
        var start: Int64 = 1
        var sum = header.checksum
        if let shown = wal?.shown, shown.salt == header.salt, shown.frame < frame {
            start = shown.frame + 1
            sum = shown.checksum
        }
        var index = start
        while index <= frame {
            guard readReal(disk, StoreFileState.frameSize, WALFrames.frameOffset(index)) == SQLITE_OK,
                authenticate(cipher, page: WALFrames.bigEndian32(disk, 0), disk: disk + WALFrames.headerSize, into: plain, file: path)
            else { return nil }
            sum = WALFrames.checksum(disk, 8, bigEndian: header.bigEndian, from: sum)
            sum = WALFrames.checksum(plain, PageCipher.pageSize, bigEndian: header.bigEndian, from: sum)
            index += 1
        }
        wal?.shown = (frame, header.salt, sum)
        return sum
    }

    func readWAL(_ cipher: PageCipher, _ buffer: UnsafeMutableRawPointer, _ amount: Int, _ offset: Int64) -> Int32 {
        if wal?.pendingFrame != nil {
            let rc = flushPendingHeader()
            if rc != SQLITE_OK { return rc }
        }
        if offset < WALFrames.fileHeaderSize { return readReal(buffer, amount, offset) }
        let (frame, within) = WALFrames.locate(offset)
        let frameStart = WALFrames.frameOffset(frame)
        switch (within, amount) {
        case (WALFrames.headerSize, PageCipher.pageSize):
            if let copy = connection?.checkpointCopy, copy.copying {
                // A checkpoint's read: the ciphertext is copied as it is (`CheckpointCopy`).
                let rc = readReal(copy.frame, StoreFileState.frameSize, frameStart)
                if rc == SQLITE_OK { copy.read(into: buffer) }
                return rc
            }
            // A page image: its page number is in the frame's header.
            let rc = readReal(disk, StoreFileState.frameSize, frameStart)
            if rc != SQLITE_OK {
                buffer.initializeMemory(as: UInt8.self, repeating: 0, count: amount)
                return rc
            }
            let page = WALFrames.bigEndian32(disk, 0)
            guard authenticate(cipher, page: page, disk: disk + WALFrames.headerSize, into: buffer, file: path) else {
                return StoreVFS.authenticationError
            }
            return SQLITE_OK
        case (0, StoreFileState.frameSize):
            return readWholeFrame(cipher, buffer, frame)
        case (16, 8):
            // The checksum after this frame, as SQLite computed it.
            guard let header = walHeader(), let sum = shownChecksum(after: frame, header: header, cipher: cipher) else { return StoreVFS.readError }
            WALFrames.putBigEndian32(buffer, 0, sum.0)
            WALFrames.putBigEndian32(buffer, 4, sum.1)
            return SQLITE_OK
        default:
            return StoreVFS.readError
        }
    }

    /// A frame read whole (header and page), as recovery reads the WAL: the page decrypted,
    /// and the header's checksum the one over plain pages when the one on disk is right (so
    /// SQLite accepts exactly the frames a SQLCipher reader would), else a wrong one.
    private func readWholeFrame(_ cipher: PageCipher, _ buffer: UnsafeMutableRawPointer, _ frame: Int64) -> Int32 {
        let rc = readReal(disk, StoreFileState.frameSize, WALFrames.frameOffset(frame))
        if rc != SQLITE_OK {
            buffer.initializeMemory(as: UInt8.self, repeating: 0, count: StoreFileState.frameSize)
            return rc
        }
        guard let header = walHeader(), let previousOnDisk = diskChecksum(after: frame - 1, header: header) else { return StoreVFS.readError }
        buffer.copyMemory(from: disk, byteCount: WALFrames.headerSize)
        var onDisk = WALFrames.checksum(disk, 8, bigEndian: header.bigEndian, from: previousOnDisk)
        onDisk = WALFrames.checksum(disk + WALFrames.headerSize, PageCipher.pageSize, bigEndian: header.bigEndian, from: onDisk)
        let saltMatches = UInt64(WALFrames.bigEndian32(disk, 8)) << 32 | UInt64(WALFrames.bigEndian32(disk, 12)) == header.salt
        guard saltMatches, onDisk == (WALFrames.bigEndian32(disk, 16), WALFrames.bigEndian32(disk, 20)) else {
            // Not a valid frame (a torn write, or left from before a restart): SQLite stops here.
            (buffer + WALFrames.headerSize).initializeMemory(as: UInt8.self, repeating: 0, count: PageCipher.pageSize)
            WALFrames.putBigEndian32(buffer, 16, ~WALFrames.bigEndian32(disk, 16))
            return SQLITE_OK
        }
        guard let previous = shownChecksum(after: frame - 1, header: header, cipher: cipher) else { return StoreVFS.authenticationError }
        guard authenticate(cipher, page: WALFrames.bigEndian32(disk, 0), disk: disk + WALFrames.headerSize, into: buffer + WALFrames.headerSize, file: path)
        else { return StoreVFS.authenticationError }
        var sum = WALFrames.checksum(disk, 8, bigEndian: header.bigEndian, from: previous)
        sum = WALFrames.checksum(buffer + WALFrames.headerSize, PageCipher.pageSize, bigEndian: header.bigEndian, from: sum)
        WALFrames.putBigEndian32(buffer, 16, sum.0)
        WALFrames.putBigEndian32(buffer, 20, sum.1)
        wal?.shown = (frame, header.salt, sum)
        return SQLITE_OK
    }

    func writeWAL(_ cipher: PageCipher, _ buffer: UnsafeRawPointer, _ amount: Int, _ offset: Int64) -> Int32 {
        if offset < WALFrames.fileHeaderSize {
            if wal?.pendingFrame != nil {
                let rc = flushPendingHeader()
                if rc != SQLITE_OK { return rc }
            }
            wal?.shown = nil
            wal?.header = nil
            wal?.written = nil
            return writeReal(buffer, amount, offset)
        }
        let (frame, within) = WALFrames.locate(offset)
        if let pending = wal?.pendingFrame, !(pending == frame && within == WALFrames.headerSize) {
            let rc = flushPendingHeader()
            if rc != SQLITE_OK { return rc }
        }
        if let shown = wal?.shown, shown.frame >= frame { wal?.shown = nil }
        switch (within, amount) {
        case (0, WALFrames.headerSize):
            wal?.pendingFrame = frame
            wal?.pendingHeader.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: buffer, byteCount: WALFrames.headerSize) }
            return SQLITE_OK
        case (WALFrames.headerSize, PageCipher.pageSize):
            let frameStart = WALFrames.frameOffset(frame)
            if wal?.pendingFrame == frame {
                wal?.pendingHeader.withUnsafeBytes { disk.copyMemory(from: $0.baseAddress!, byteCount: WALFrames.headerSize) }
                wal?.pendingFrame = nil
            } else {
                // A page rewritten in place by the transaction that wrote it: its header (and
                // its checksum) is rewritten at commit.
                let rc = readReal(disk, WALFrames.headerSize, frameStart)
                if rc != SQLITE_OK { return rc }
                let page = WALFrames.bigEndian32(disk, 0)
                guard prepareSalt(cipher, writingPage: page), cipher.encrypt(page: page, plain: buffer, into: disk + WALFrames.headerSize) else {
                    return StoreVFS.writeError
                }
                return writeReal(disk + WALFrames.headerSize, PageCipher.pageSize, offset)
            }
            let page = WALFrames.bigEndian32(disk, 0)
            guard prepareSalt(cipher, writingPage: page), cipher.encrypt(page: page, plain: buffer, into: disk + WALFrames.headerSize) else {
                return StoreVFS.writeError
            }
            return writeSealed(frame, bytes: StoreFileState.frameSize)
        default:
            return StoreVFS.writeError
        }
    }

    /// Writes the frame header held back, with the checksum over the page already on disk.
    func flushPendingHeader() -> Int32 {
        guard let frame = wal?.pendingFrame else { return SQLITE_OK }
        wal?.pendingFrame = nil
        let frameStart = WALFrames.frameOffset(frame)
        wal?.pendingHeader.withUnsafeBytes { disk.copyMemory(from: $0.baseAddress!, byteCount: WALFrames.headerSize) }
        guard readReal(disk + WALFrames.headerSize, PageCipher.pageSize, frameStart + Int64(WALFrames.headerSize)) == SQLITE_OK else {
            return StoreVFS.writeError
        }
        return writeSealed(frame, bytes: WALFrames.headerSize)
    }

    /// Sets the checksums of the frame in `disk` (its header, then its ciphertext), chained from
    /// the frame before it on disk, and writes its first `bytes` bytes (the header, or all).
    private func writeSealed(_ frame: Int64, bytes: Int) -> Int32 {
        guard let header = walHeader(salt: Self.salt(ofFrameHeader: disk)), let previous = diskChecksum(after: frame - 1, header: header) else {
            return StoreVFS.writeError
        }
        var sum = WALFrames.checksum(disk, 8, bigEndian: header.bigEndian, from: previous)
        sum = WALFrames.checksum(disk + WALFrames.headerSize, PageCipher.pageSize, bigEndian: header.bigEndian, from: sum)
        WALFrames.putBigEndian32(disk, 16, sum.0)
        WALFrames.putBigEndian32(disk, 20, sum.1)
        let rc = writeReal(disk, bytes, WALFrames.frameOffset(frame))
        wal?.written = rc == SQLITE_OK ? (frame, header.salt, sum) : nil
        return rc
    }
}
