/// How an encrypted connection's checkpoint copies pages from the WAL into the database file:
/// as SQLCipher does, each page's ciphertext is copied as it is on disk, neither decrypted nor
/// encrypted again.
///
/// SQLite tells the database file when a checkpoint starts and stops copying
/// (`SQLITE_FCNTL_CKPT_START`, `SQLITE_FCNTL_CKPT_DONE`). In between, it reads each page from
/// the WAL into one buffer and writes that buffer to the database file at once, and does nothing
/// else with it. While `copying`, the VFS reads the WAL frame here instead of decrypting it into
/// SQLite's buffer (which is left untouched), and the database write that follows takes this
/// frame's page; any other database write is refused, so a page is never encrypted from a buffer
/// the VFS did not fill. A page is still authenticated whenever SQLite reads it from either file
/// (the WAL's frames when the WAL index is rebuilt, and every page SQLite reads); its HMAC
/// covers its page number, so a frame altered on disk, or copied to any other place, fails there
/// and is never returned as data.
final class CheckpointCopy {
    /// Between `SQLITE_FCNTL_CKPT_START` and `SQLITE_FCNTL_CKPT_DONE`.
    var copying = false
    /// The frame last read (its header, then its page's ciphertext).
    let frame = UnsafeMutableRawPointer.allocate(byteCount: StoreFileState.frameSize, alignment: 16)
    private var page: UInt32 = 0
    private var destination: UnsafeRawPointer?

    deinit { frame.deallocate() }

    /// The checkpoint read `frame` (just read into `frame`) for SQLite's `buffer`.
    func read(into buffer: UnsafeRawPointer) {
        page = WALFrames.bigEndian32(frame, 0)
        destination = buffer
    }

    /// The ciphertext to write for page `page` from SQLite's `buffer`: the frame's, when that
    /// is the buffer the checkpoint last read that page into; used once.
    func ciphertext(page: UInt32, buffer: UnsafeRawPointer) -> UnsafeRawPointer? {
        guard page == self.page, buffer == destination else { return nil }
        self.page = 0
        destination = nil
        return UnsafeRawPointer(frame + WALFrames.headerSize)
    }

    /// Marks the start or the end of a checkpoint's copy.
    func set(copying: Bool) {
        self.copying = copying
        page = 0
        destination = nil
    }
}
