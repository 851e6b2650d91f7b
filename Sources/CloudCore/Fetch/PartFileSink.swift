import Foundation
import MediaBox

/// One part's answer written into the partial file through MediaBox's `MediaResourcePartWriter`,
/// never more than the part's length, so bytes recorded present around the part are never
/// touched; what is written counts only once the part verifies (MediaBox records the range when
/// the part is reported), and an unreported range is fetched and overwritten again.
///
/// By default each chunk is written at its offset as it arrives: no part buffer, and each chunk
/// is written while it is still in the CPU cache. When the writer prefers whole parts (a large
/// download that completes with a sync, written with direct I/O), the bytes are gathered in a
/// page-aligned chunk of `chunkSize` instead; each full chunk is written (with direct I/O) on
/// another thread while the next one fills, and `commit()` writes the rest once the part has
/// verified. At most one write per part is in progress: when the next chunk is full before it
/// ended (the disk is behind), the transfer waits for it. A part in flight thus holds two chunks
/// at most, not the whole part: eight parts arriving at once, as they do after a long round
/// trip, hold 4 MiB rather than 8, and a slow disk holds the transfer back instead of letting
/// gathered bytes pile up.
final class PartFileSink: @unchecked Sendable {
    // @unchecked Sendable: the chunk and `written` are changed only by the transport thread
    // during the transfer (chunks come in order) and read after `send` has returned.
    private let writer: MediaResourcePartWriter
    private let part: PartSpec
    private let gathers: Bool
    /// The chunk being filled, and the part's offset where it starts.
    private var chunk: MediaResourcePartBuffer?
    private var chunkStart: Int64 = 0
    private(set) var written: Int64 = 0
    /// The chunk write in progress (at most one), and its failure.
    private let writing = DispatchGroup()
    private let writeFailure = WriteFailure()

    private final class WriteFailure: @unchecked Sendable {
        // @unchecked Sendable: guarded by `lock`.
        private let lock = NSLock()
        private var error: (any Error)?
        func set(_ e: any Error) { lock.withLock { error = error ?? e } }
        func take() -> (any Error)? {
            lock.withLock {
                defer { error = nil }; return error
            }
        }
    }

    /// Bytes per chunk: a multiple of `DirectIO.alignment`, and a whole number of chunks makes
    /// every part size above it.
    static let chunkSize = 256 << 10

    init(writer: MediaResourcePartWriter, part: PartSpec) {
        self.writer = writer
        self.part = part
        self.gathers = writer.prefersWholeParts
    }

    /// The transport destination; `maxLength` also admits a collected JSON answer (a redirect).
    func destination(maxLength: Int64) -> ResponseDestination {
        .sink(maxLength: maxLength) { [self] bytes in try self.consume(bytes) }
    }

    /// Writes what is still gathered (nothing to do when the bytes were written as they came),
    /// then gives the chunk's memory back. Call once the part has verified.
    func commit() async throws {
        try finishWrite()
        guard let rest = chunk else { return }
        chunk = nil
        if rest.count > 0 { try await writer.writePart(rest, at: part.offset + chunkStart) }
    }

    /// Waits for a chunk write still in progress (nothing to wait for after `commit()`), so that
    /// a retry of a part that failed never races an earlier attempt's bytes.
    func abandon() { writing.wait() }

    /// Waits for the chunk write in progress, if any (the disk is behind: the transfer waits),
    /// then starts writing `full` on another thread while the next chunk fills.
    private func startWrite(_ full: MediaResourcePartBuffer, at offset: Int64) throws {
        try finishWrite()
        let writer = self.writer
        let box = writeFailure
        writing.enter()
        DispatchQueue.global().async { [writing] in
            do { try writer.writePartNow(full, at: offset) } catch { box.set(error) }
            writing.leave()
        }
    }

    /// Waits for the chunk write in progress; throws its failure.
    private func finishWrite() throws {
        writing.wait()
        if let error = writeFailure.take() { throw error }
    }

    private func consume(_ bytes: UnsafeRawBufferPointer) throws {
        let end = written + Int64(bytes.count)
        guard end <= part.limit else { throw TransportError.tooLarge(limit: part.limit, received: end) }
        guard gathers else {
            try writer.write(bytes, at: part.offset + written)
            written = end
            return
        }
        var rest = bytes
        while !rest.isEmpty {
            if chunk == nil {
                guard let fresh = MediaResourcePartBuffer(capacity: Self.chunkSize) else {
                    // Without memory for a chunk, the rest is written as it arrives.
                    try writer.write(rest, at: part.offset + written)
                    written = end
                    return
                }
                chunk = fresh
                chunkStart = written
            }
            guard let current = chunk else { return }
            let n = min(current.capacity - current.count, rest.count)
            _ = current.append(UnsafeRawBufferPointer(rebasing: rest[..<n]))
            written += Int64(n)
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            if current.count == current.capacity {
                chunk = nil
                try startWrite(current, at: part.offset + chunkStart)
            }
        }
    }
}
