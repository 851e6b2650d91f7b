import Foundation
import MediaBox

/// One part's answer written into the partial file through MediaBox's `MediaResourcePartWriter`,
/// never more than the part's length, so bytes recorded present around the part are never
/// touched; what is written counts only once the part verifies.
///
/// By default each chunk is written at its offset as it arrives: no part buffer, and each chunk
/// is written while it is still in the CPU cache. When the writer prefers whole parts (a large
/// download that completes with a sync, written with direct I/O), the chunks are gathered in a
/// part buffer instead and written by `commit()` once the part has verified.
final class PartFileSink: @unchecked Sendable {
    // @unchecked Sendable: `written` and the buffer are changed only by the transport thread
    // during the transfer (chunks come in order) and read after `send` has returned.
    private let writer: MediaResourcePartWriter
    private let part: PartSpec
    private var buffer: MediaResourcePartBuffer?
    private(set) var written: Int64 = 0

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
        guard let buffer else { return }
        self.buffer = nil
        if buffer.count > 0 { try await writer.writePart(buffer, at: part.offset) }
    }

    private func consume(_ bytes: UnsafeRawBufferPointer) throws {
        let end = written + Int64(bytes.count)
        guard end <= part.limit else { throw TransportError.tooLarge(limit: part.limit, received: end) }
        if let buffer {
            guard buffer.append(bytes) else { throw TransportError.tooLarge(limit: Int64(buffer.capacity), received: end) }
        } else {
            try writer.write(bytes, at: part.offset + written)
        }
        written = end
    }
}
