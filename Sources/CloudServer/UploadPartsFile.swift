import CloudCrypto
import CloudProtocol
import Foundation
import NIOCore

/// The stored parts of one upload in **one** file (`<upload dir>/parts/<fileId>`): part `p` lives
/// at `p × slot`, its bytes written there once, straight from the request body. `sendMedia`
/// truncates the file to the total size and renames it into `files/<id>` — no file per part
/// (creating and deleting thousands of small files cost more CPU than the bytes themselves),
/// no second copy.
///
/// `slot` is the upload's part size, learnt from the first part whose size must be the part size
/// (a non-last big part; part 0 of a small upload when it is a full-part size); until then it is
/// a guess of 512 KiB (every part fits). A part larger than `slot` (a client that changed its
/// part size) moves the stored parts to 512 KiB slots; a guessed layout that turns out wrong is
/// moved to the real one when the part size is learnt, or at `finish`. Moves copy only the parts
/// stored so far, within the file, and happen when a later part arrives before the first full
/// one (a small upload's parts 0 and 1 sent at once).
///
/// A part's bytes are written in full before `record` makes it visible, so a request that fails
/// half-way never damages the copy stored before it. All I/O on the file holds `lock`.
final class UploadPartsFile: @unchecked Sendable {
    // @unchecked Sendable: every field is guarded by `lock`.
    let path: String
    private let lock = NSLock()
    private var fd: Int32 = -1
    private var slot = 0
    private var slotKnown = false
    /// Size of every part written (the bytes at `p × slot`).
    private var sizes: [Int: Int] = [:]
    private var closed = false

    init(path: String) { self.path = path }

    enum WriteResult { case written, closed }

    /// The part size `part` of `size` bytes proves, if any.
    static func partSizeHint(part: Int, size: Int, totalParts: Int?, big: Bool) -> Int? {
        guard UploadPartRules.isValidFullPartSize(size) else { return nil }
        if big, let t = totalParts { return part < t - 1 ? size : nil }
        return part == 0 ? size : nil
    }

    /// Writes the part's bytes (the request body's buffers, `size` bytes in all) at its slot.
    /// `.closed` if the upload was sent or forgotten meanwhile (the caller starts a new file).
    func write(part: Int, chunks: [ByteBuffer], size: Int, hint: Int?) throws -> WriteResult {
        lock.lock()
        defer { lock.unlock() }
        if closed { return .closed }
        if fd < 0 {
            fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw CloudError(.internalError, message: "cannot create the upload file") }
        }
        if slot == 0 {
            slot = hint ?? UploadPartRules.maxPartSize
            slotKnown = hint != nil
        }
        var others = sizes
        others[part] = nil
        if size > slot {
            // A part larger than the layout allows: every part fits a 512 KiB slot.
            try relayout(to: UploadPartRules.maxPartSize, sizes: others)
            slotKnown = false
        } else if let h = hint, h != slot, !slotKnown, others.values.allSatisfy({ $0 <= h }) {
            try relayout(to: h, sizes: others)
            slotKnown = true
        }
        var offset = part * slot
        for chunk in chunks {
            try chunk.withUnsafeReadableBytes { raw in try PartFiles.writeAll(fd, raw, at: offset) }
            offset += chunk.readableBytes
        }
        sizes[part] = size
        return .written
    }

    /// Reads part `part` as written now into `buffer`; its byte count.
    func read(part: Int, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        lock.lock()
        defer { lock.unlock() }
        guard !closed, fd >= 0, let n = sizes[part], n <= buffer.count else { throw CocoaError(.fileReadUnknown) }
        try Self.readAll(fd, UnsafeMutableRawBufferPointer(rebasing: buffer[0..<n]), at: part * slot)
        return n
    }

    /// Lowercase hex MD5 of parts `0..<parts` (only when `sendMedia` carries an `md5`), on a
    /// dispatch queue, off the cooperative pool.
    func md5(parts: Int) async throws -> String {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<String, Error>) in
            DispatchQueue.global().async {
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: UploadPartRules.maxPartSize, alignment: 16)
                defer { buffer.deallocate() }
                var md5 = MD5Stream()
                do {
                    for p in 0..<parts {
                        let n = try self.read(part: p, into: buffer)
                        md5.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                    }
                } catch {
                    c.resume(throwing: error)
                    return
                }
                c.resume(returning: md5.finalize().hexString)
            }
        }
    }

    /// Turns the parts into the sent file at `destination`: parts `0..<partSizes.count` (checked
    /// by the caller: all but the last of one size) laid out back to back, nothing after them.
    /// Closes this upload file; later parts for the file id start a new one.
    func finish(partSizes: [Int], to destination: String) throws {
        lock.lock()
        defer { lock.unlock() }
        guard !closed, fd >= 0 else { throw CloudError(.internalError, message: "upload file gone") }
        if partSizes.count > 1, partSizes[0] != slot {
            try relayout(to: partSizes[0], sizes: sizes.filter { $0.key < partSizes.count })
        }
        let total = partSizes.reduce(0, +)
        guard ftruncate(fd, off_t(total)) == 0 else { throw CloudError(.internalError, message: "cannot truncate the upload file") }
        close(fd)
        fd = -1
        closed = true
        guard rename(path, destination) == 0 else {
            unlink(path)
            throw CloudError(.internalError, message: "cannot store the file")
        }
    }

    /// The upload was forgotten or consumed: closes and removes the file (if still there).
    func discard() {
        lock.lock()
        defer { lock.unlock() }
        if fd >= 0 { close(fd) }
        fd = -1
        if !closed { unlink(path) }
        closed = true
        sizes = [:]
    }

    var isClosed: Bool { lock.withLock { closed } }

    // MARK: Moving parts (lock held)

    /// Moves the parts in `keep` to `newSlot` within the same file (no new file: creating one
    /// costs an inode, which on a busy file system costs more than the bytes). Shrinking slots
    /// move parts in ascending order and growing ones in descending order, so a part is never
    /// written over one not moved yet. A failed move leaves no part stored (the client's
    /// `sendMedia` then learns which part is missing and sends it again).
    private func relayout(to newSlot: Int, sizes keep: [Int: Int]) throws {
        if newSlot == slot {
            sizes = keep
            return
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: UploadPartRules.maxPartSize, alignment: 16)
        defer { buffer.deallocate() }
        let order = keep.sorted { newSlot < slot ? $0.key < $1.key : $0.key > $1.key }
        do {
            for (p, n) in order {
                let b = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<n])
                try Self.readAll(fd, b, at: p * slot)
                try PartFiles.writeAll(fd, UnsafeRawBufferPointer(b), at: p * newSlot)
            }
        } catch {
            sizes = [:]
            throw error
        }
        slot = newSlot
        sizes = keep
    }

    private static func readAll(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw CocoaError(.fileReadUnknown)
            }
            if n == 0 { throw CocoaError(.fileReadCorruptFile) }
            done += n
        }
    }
}
