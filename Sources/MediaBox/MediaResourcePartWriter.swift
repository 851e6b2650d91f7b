import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Lets a fetcher write a part's bytes into the partial file without giving it the partial file
/// itself: the fetcher writes, and only when the part has verified does it report
/// `MediaResourceFetchEvent.dataWritten`, after which MediaBox records the range. Bytes written
/// but never reported stay outside the recorded ranges, so they count as missing and are fetched
/// (and overwritten) again.
///
/// A fetcher either streams a part's bytes as they arrive (`write`: no part buffer, each chunk
/// written while it is still in the CPU cache), or, when `prefersWholeParts` says so, gathers
/// the part in a `MediaResourcePartBuffer` and hands it over once verified (`writePart`). MediaBox
/// prefers whole parts for a large download whose completion syncs the file: the part is then
/// written with direct I/O (see `DirectIO`), and the completing fsync finds no page-cache
/// write-back left to do. Parts a fetcher hands over in memory (`dataPart`) are then written the
/// same way.
///
/// MediaBox revokes the writer before it releases the partial file's lock: a write still in
/// progress finishes first, later ones fail, so a transfer that outlives its fetch never touches
/// a file another fetch has taken over.
public final class MediaResourcePartWriter: Sendable {
    /// The partial file's path (for errors).
    public let path: String
    /// Whether parts should come whole, in a `MediaResourcePartBuffer` handed to `writePart`.
    public let prefersWholeParts: Bool

    private struct Descriptors {
        /// A duplicate of the partial file's descriptor; -1 once revoked.
        var buffered: Int32
        /// The same file opened for direct writes, or -1.
        var direct: Int32
    }
    private let descriptors: Mutex<Descriptors>

    /// `directIO`: also open the file for direct writes, and prefer whole parts when it can be.
    init(duplicating fd: Int32, path: String, directIO: Bool = false) throws {
        let own = dup(fd)
        if own < 0 { throw PosixFile.fail(path, "dup") }
        let direct = directIO ? (DirectIO.reopenForWriting(own) ?? -1) : -1
        self.path = path
        self.prefersWholeParts = direct >= 0
        self.descriptors = Mutex(Descriptors(buffered: own, direct: direct))
    }

    deinit { revoke() }

    /// Writes `bytes` at `offset` of the partial file. Throws once the fetch has ended.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        try descriptors.withLock { d in
            guard d.buffered >= 0 else { throw revoked }
            try PosixFile.pwriteAll(d.buffered, bytes, offset: offset, path: path)
        }
    }

    /// Writes the part gathered in `buffer` at `offset`, on a thread outside the cooperative
    /// pool: the aligned bulk with direct I/O when the writer has it and `offset` allows it, the
    /// rest (the unaligned end of a file, or everything on a file system that refuses direct
    /// writes) through the page cache. The buffer's memory is given back when this returns,
    /// whether or not the write succeeded. Throws once the fetch has ended.
    public func writePart(_ buffer: MediaResourcePartBuffer, at offset: Int64) async throws {
        try await MediaBox.offPool { try self.writePartNow(buffer, at: offset) }
    }

    /// Writes a part already in hand (a fetcher's `dataPart`) the way `writePart` does, through a
    /// part buffer.
    func writePart(_ data: Data, at offset: Int64) async throws {
        guard let buffer = MediaResourcePartBuffer(capacity: data.count) else {
            return try data.withUnsafeBytes { try write($0, at: offset) }
        }
        _ = data.withUnsafeBytes { buffer.append($0) }
        try await writePart(buffer, at: offset)
    }

    private func writePartNow(_ buffer: MediaResourcePartBuffer, at offset: Int64) throws {
        defer { buffer.releaseMemory() }
        try descriptors.withLock { d in
            guard d.buffered >= 0 else { throw revoked }
            let bytes = buffer.bytes
            var done = 0
            let alignment = DirectIO.alignment
            let aligned = bytes.count / alignment * alignment
            if d.direct >= 0, offset % Int64(alignment) == 0, aligned > 0 {
                done = try DirectIO.pwrite(d.direct, UnsafeRawBufferPointer(rebasing: bytes[0..<aligned]), offset: offset, path: path)
                if done == 0 {
                    // Refused outright: this file system takes no direct writes.
                    Glibc.close(d.direct)
                    d.direct = -1
                }
            }
            if done < bytes.count {
                try PosixFile.pwriteAll(d.buffered, UnsafeRawBufferPointer(rebasing: bytes[done...]), offset: offset + Int64(done), path: path)
            }
        }
    }

    /// Whether parts are currently written with direct I/O (for tests).
    var writesDirectly: Bool { descriptors.withLock { $0.direct >= 0 } }

    private var revoked: MediaBoxError {
        .io(path: path, operation: "write after the fetch ended", errno: EBADF)
    }

    /// Waits for a write in progress and refuses every later one.
    func revoke() {
        descriptors.withLock { d in
            if d.buffered >= 0 { Glibc.close(d.buffered) }
            if d.direct >= 0 { Glibc.close(d.direct) }
            d = Descriptors(buffered: -1, direct: -1)
        }
    }
}
