import CCurl
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// libcurl's memory (`curl_global_init_mem`), so that its per-transfer buffers are reused.
///
/// libcurl allocates a transfer's receive buffer (`CURLOPT_BUFFERSIZE`, 64 KiB for parts) and
/// upload buffer (up to a 512 KiB part) when the transfer starts and frees them when it ends: one
/// pair per part. glibc gives such freed blocks back to the kernel as its heap shrinks, and the
/// next part's buffer then faults every page in anew, inside `recv` or `pread`. Requests of
/// `pooledSizes` are served instead from blocks of the next power of two, and at most `keepPerSize`
/// idle blocks of each size are kept for the next transfer (a 64 KiB + 1 receive buffer takes a
/// 128 KiB block; the pages it never touches never become resident); the others go back to malloc,
/// which keeps reusing them as before. Every other request goes to malloc directly. Each allocation
/// carries a 16-byte header (malloc's own alignment) holding its capacity, which `free` and
/// `realloc` read: a pooled block's capacity is itself one of `pooledSizes`, an unpooled
/// allocation's never is. libcurl takes the memory functions of whoever initialises it first: where
/// another user (Foundation's `URLSession`) came first, as in a test process, libcurl keeps malloc
/// and nothing is pooled.
enum CurlMemory {
    /// Sizes served from the pool, as requested (each rounded up to a power of two).
    static let pooledSizes = (64 << 10) + 1...512 << 10
    /// Idle blocks kept per size; more are freed.
    static let keepPerSize = 8
    private static let headerSize = 16

    private static let idle = Mutex<[Int: [UInt]]>([:])
    private static let reusedBlocks = Atomic<Int>(0)

    /// How many allocations the pool has served from a kept block since the process started.
    static var reused: Int { reusedBlocks.load(ordering: .relaxed) }

    /// `curl_global_init_mem` with these functions.
    static func globalInit(flags: Int) -> CURLcode {
        curl_global_init_mem(
            flags,
            { CurlMemory.allocate(Int($0)) },
            { CurlMemory.release($0) },
            { CurlMemory.reallocate($0, Int($1)) },
            { string in
                guard let string else { return nil }
                let length = strlen(string) + 1
                guard let copy = CurlMemory.allocate(length) else { return nil }
                memcpy(copy, string, length)
                return copy.assumingMemoryBound(to: CChar.self)
            },
            { count, size in
                let (total, overflow) = count.multipliedReportingOverflow(by: size)
                guard !overflow, let p = CurlMemory.allocate(Int(total)) else { return nil }
                memset(p, 0, Int(total))
                return p
            })
    }

    private static func allocate(_ size: Int) -> UnsafeMutableRawPointer? {
        guard size >= 0, size <= Int.max - headerSize else { return nil }
        guard pooledSizes.contains(size) else {
            guard let base = malloc(size + headerSize) else { return nil }
            return stamp(base, capacity: size)
        }
        let capacity = 1 << (Int.bitWidth - (size - 1).leadingZeroBitCount)
        if let kept = idle.withLock({ $0[capacity]?.popLast() }) {
            reusedBlocks.add(1, ordering: .relaxed)
            return stamp(UnsafeMutableRawPointer(bitPattern: kept)!, capacity: capacity)
        }
        guard let base = malloc(capacity + headerSize) else { return nil }
        return stamp(base, capacity: capacity)
    }

    private static func stamp(_ base: UnsafeMutableRawPointer, capacity: Int) -> UnsafeMutableRawPointer {
        base.storeBytes(of: capacity, as: Int.self)
        return base + headerSize
    }

    private static func release(_ pointer: UnsafeMutableRawPointer?) {
        guard let pointer else { return }
        let base = pointer - headerSize
        let capacity = base.load(as: Int.self)
        if pooledSizes.contains(capacity) {
            let kept = idle.withLock { idle -> Bool in
                guard idle[capacity, default: []].count < keepPerSize else { return false }
                idle[capacity, default: []].append(UInt(bitPattern: base))
                return true
            }
            if kept { return }
        }
        free(base)
    }

    private static func reallocate(_ pointer: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
        guard let pointer else { return allocate(size) }
        guard size >= 0, size <= Int.max - headerSize else { return nil }
        let base = pointer - headerSize
        let capacity = base.load(as: Int.self)
        if !pooledSizes.contains(capacity), !pooledSizes.contains(size) {
            // Neither side pooled: malloc's own realloc.
            guard let moved = realloc(base, size + headerSize) else { return nil }
            return stamp(moved, capacity: size)
        }
        guard let fresh = allocate(size) else { return nil }
        memcpy(fresh, pointer, min(capacity, size))
        release(pointer)
        return fresh
    }
}
