import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Reusable blocks of memory of a file part's largest size (1 MiB), mapped page-aligned (so they
/// also serve direct I/O, see `DirectIO`). A download holds only a few parts at once; its part
/// buffers, and the transport's collected part bodies, are mapped once and reused, and at most
/// `keep` idle blocks are kept. With malloc instead, whose mmap threshold rises to 1 MiB after
/// the first such buffer is freed, freed part buffers would stay resident in per-thread arenas,
/// and a fresh mapping per part would fault in every page anew.
public final class PartMemoryPool: Sendable {
    public static let shared = PartMemoryPool()
    /// The size of every block.
    public static let blockSize = 1 << 20
    /// Idle blocks kept for reuse; more are unmapped when given back.
    public static let keep = 8

    private let idle = Mutex<[UInt]>([])

    /// An idle block, or a newly mapped one; nil if none can be mapped.
    public func take() -> UnsafeMutableRawPointer? {
        if let address = idle.withLock({ $0.popLast() }) { return UnsafeMutableRawPointer(bitPattern: address) }
        let p = mmap(nil, Self.blockSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let p, p != MAP_FAILED else { return nil }
        return p
    }

    /// Gives back a block `take` returned.
    public func give(_ p: UnsafeMutableRawPointer) {
        let kept = idle.withLock { idle -> Bool in
            guard idle.count < Self.keep else { return false }
            idle.append(UInt(bitPattern: p))
            return true
        }
        if !kept { munmap(p, Self.blockSize) }
    }
}
