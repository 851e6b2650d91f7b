import Foundation
import MediaBox

/// One part's answer written straight into the partial file, at the part's offset, as it arrives
/// (through MediaBox's `MediaResourcePartWriter`): no part buffer, and each chunk is written while
/// it is still in the CPU cache. Never more than the part's length is written, so bytes recorded
/// present around the part are never touched; what is written counts only once the part verifies.
final class PartFileSink: @unchecked Sendable {
    // @unchecked Sendable: `written` is changed only by the transport thread during the transfer
    // (chunks come in order) and read after `send` has returned.
    private let writer: MediaResourcePartWriter
    private let part: PartSpec
    private(set) var written: Int64 = 0

    init(writer: MediaResourcePartWriter, part: PartSpec) {
        self.writer = writer
        self.part = part
    }

    /// The transport destination; `maxLength` also admits a collected JSON answer (a redirect).
    func destination(maxLength: Int64) -> ResponseDestination {
        .sink(maxLength: maxLength) { [self] bytes in try self.consume(bytes) }
    }

    private func consume(_ bytes: UnsafeRawBufferPointer) throws {
        let end = written + Int64(bytes.count)
        guard end <= part.limit else { throw TransportError.tooLarge(limit: part.limit, received: end) }
        try writer.write(bytes, at: part.offset + written)
        written = end
    }
}
