#if canImport(Glibc)
    import Glibc
#endif

/// One part's bytes gathered in page-aligned memory (as direct I/O needs it), handed to
/// `MediaResourcePartWriter.writePart` once the part has verified: unverified bytes never reach
/// the file, and the write is one direct write of the whole part. A part of up to 1 MiB (every
/// cloud part) takes a block of `PartMemoryPool`; writing the part gives it back at once.
public final class MediaResourcePartBuffer: @unchecked Sendable {
    // @unchecked Sendable: filled by one transport thread while its request runs, then written
    // by the fetch that made it once the request has returned; never touched concurrently.
    public let capacity: Int
    public private(set) var count = 0
    /// Nil once the memory has been given back.
    private var storage: UnsafeMutableRawPointer?
    /// The length of a mapping of its own, or 0 for a pool block.
    private let mappedLength: Int

    /// A buffer for up to `capacity` bytes; nil when no memory can be mapped.
    public init?(capacity: Int) {
        self.capacity = capacity
        if capacity <= PartMemoryPool.blockSize, let block = PartMemoryPool.shared.take() {
            storage = block
            mappedLength = 0
        } else {
            let length = max(capacity, 1)
            let p = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            guard let p, p != MAP_FAILED else { return nil }
            storage = p
            mappedLength = length
        }
    }

    deinit { releaseMemory() }

    /// Appends `bytes`; false (and nothing appended) when they would pass the capacity, or the
    /// part has been written.
    public func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let storage, bytes.count <= capacity - count else { return false }
        if let source = bytes.baseAddress { (storage + count).copyMemory(from: source, byteCount: bytes.count) }
        count += bytes.count
        return true
    }

    /// The bytes appended so far (none once the memory has been given back).
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: storage, count: storage == nil ? 0 : count) }

    /// Gives the memory back (to the pool, or unmapped): the next part can take the block
    /// before this object is freed, wherever a reference to it lingers.
    func releaseMemory() {
        guard let storage else { return }
        if mappedLength == 0 { PartMemoryPool.shared.give(storage) } else { munmap(storage, mappedLength) }
        self.storage = nil
    }
}
