import Foundation
import MediaBox

/// One part's answer written into the partial file through MediaBox's `MediaResourcePartWriter`,
/// never more than the part's length, so bytes recorded present around the part are never
/// touched; what is written counts only once the part verifies.
///
/// By default the chunks are written as they arrive, gathered into blocks of `blockSize` at
/// offsets that are multiples of it (a part starts on one): no part buffer, each block written
/// while it is still in the CPU cache, and the page cache takes each block as one large folio.
/// The chunks themselves start wherever the answer's headers left the stream, so written one by
/// one they would land at unaligned offsets, where the page cache takes them page by page, at
/// about twice the kernel's CPU per byte. The last, shorter block is written by `commit()`.
/// When the writer prefers whole parts (a large download that completes with a sync, written
/// with direct I/O), the chunks are gathered in a part buffer instead and written by `commit()`
/// once the part has verified.
final class PartFileSink: @unchecked Sendable {
    // @unchecked Sendable: `received`, the block and the buffer are changed only by the transport
    // thread during the transfer (chunks come in order) and read after `send` has returned.
    private let writer: MediaResourcePartWriter
    private let part: PartSpec
    private var buffer: MediaResourcePartBuffer?
    /// The block being gathered (streamed parts only), allocated with the first chunk.
    private var block: UnsafeMutableRawBufferPointer?
    /// Bytes of the part already written to the file (a multiple of `blockSize`, until `commit`).
    private var flushed: Int64 = 0
    /// Bytes of the part received.
    private(set) var received: Int64 = 0

    /// Gathered before each write of a streamed part.
    static let blockSize = 64 << 10

    init(writer: MediaResourcePartWriter, part: PartSpec) {
        self.writer = writer
        self.part = part
        // Without memory for it (nil), the part is written as it arrives.
        self.buffer = writer.prefersWholeParts ? MediaResourcePartBuffer(capacity: Int(part.limit)) : nil
    }

    /// The transport destination; `maxLength` also admits a collected JSON answer (a redirect).
    func destination(maxLength: Int64) -> ResponseDestination {
        .sink(maxLength: maxLength) { [self] bytes in try self.consume(bytes) }
    }

    /// Writes a gathered part into the file (nothing to do when the chunks were written as they
    /// came), then gives the buffer back at once, whoever still holds the sink. Call once the part
    /// has verified.
    func commit() async throws {
        if let buffer {
            self.buffer = nil
            if buffer.count > 0 { try await writer.writePart(buffer, at: part.offset) }
            return
        }
        try flushBlock()
        releaseBlock()
    }

    deinit { releaseBlock() }

    private func releaseBlock() {
        block?.deallocate()
        block = nil
    }

    /// Writes what the block holds at its place in the file.
    private func flushBlock() throws {
        let count = Int(received - flushed)
        guard count > 0, let block else { return }
        try writer.write(UnsafeRawBufferPointer(rebasing: block[0..<count]), at: part.offset + flushed)
        flushed = received
    }

    private func consume(_ bytes: UnsafeRawBufferPointer) throws {
        let end = received + Int64(bytes.count)
        guard end <= part.limit else { throw TransportError.tooLarge(limit: part.limit, received: end) }
        if let buffer {
            guard buffer.append(bytes) else { throw TransportError.tooLarge(limit: Int64(buffer.capacity), received: end) }
            received = end
            return
        }
        if block == nil { block = .allocate(byteCount: Self.blockSize, alignment: 4096) }
        var rest = bytes
        while !rest.isEmpty, let block {
            let filled = Int(received - flushed)
            let n = min(rest.count, Self.blockSize - filled)
            UnsafeMutableRawBufferPointer(rebasing: block[filled..<(filled + n)]).copyMemory(from: UnsafeRawBufferPointer(rebasing: rest[0..<n]))
            received += Int64(n)
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            if received - flushed == Int64(Self.blockSize) { try flushBlock() }
        }
    }
}
