#if canImport(Glibc)
    import Glibc
#endif

/// The page an encrypted connection last read from its WAL, as SQLite got it and as it is on
/// disk. A checkpoint reads each page from the WAL and writes the same buffer, unchanged, to
/// the database file: that write then takes the ciphertext already authenticated in the WAL
/// (valid at any place in either file, since its HMAC covers the page number, not the offset)
/// instead of encrypting the page again.
final class CheckpointCopy {
    private var page: UInt32 = 0
    private var source: UnsafeRawPointer?
    private let plain = UnsafeMutableRawPointer.allocate(byteCount: PageCipher.pageSize, alignment: 16)
    private let cipher = UnsafeMutableRawPointer.allocate(byteCount: PageCipher.pageSize, alignment: 16)

    deinit {
        plain.initializeMemory(as: UInt8.self, repeating: 0, count: PageCipher.pageSize)
        plain.deallocate()
        cipher.deallocate()
    }

    /// Notes page `page` read from the WAL into `buffer` (decrypted) from `disk` (ciphertext).
    func remember(page: UInt32, buffer: UnsafeRawPointer, disk: UnsafeRawPointer) {
        self.page = page
        source = buffer
        plain.copyMemory(from: buffer, byteCount: PageCipher.pageSize)
        cipher.copyMemory(from: disk, byteCount: PageCipher.pageSize)
    }

    /// The ciphertext of page `page` when `buffer` is the buffer it was last read into from the
    /// WAL and still holds exactly what was read; used once.
    func ciphertext(page: UInt32, buffer: UnsafeRawPointer) -> UnsafeRawPointer? {
        guard page == self.page, buffer == source, memcmp(buffer, plain, PageCipher.pageSize) == 0 else { return nil }
        self.page = 0
        source = nil
        return UnsafeRawPointer(cipher)
    }
}
