import Foundation

/// Collects resources whose bytes are in hand and stores them with `MediaBox.storeBatch`, one
/// batch after the other, off the cooperative pool, as a group commit: when no batch is being
/// stored, whatever is pending is stored at once (the first item does not wait for a batch to
/// fill, the last ones do not wait behind a half-empty batch); while one is being stored, the
/// next accumulates, so batches grow just as large as the disk needs to keep up (one sync of
/// the data, one of the names and one StorageBox transaction each). An adder that finds the
/// pending batch full waits until it is taken, which keeps producers (downloads, decoders) from
/// running far ahead of the disk and memory bounded by about `2 × maxBytes`.
///
/// Nothing added is durable until `flush` returns: callers report items stored only then. A
/// failed batch makes every later `add` and `flush` throw its error.
public actor BatchStore {
    private let mediaBox: MediaBox
    private let durability: MediaBox.BatchDurability
    private let maxBytes: Int
    private let maxCount: Int
    private var pending: [(MediaResourceId, Data)] = []
    private var infos: [MediaResourceId: MediaResourceStorageInfo] = [:]
    private var bytes = 0
    /// A batch is being stored on `queue`.
    private var storing = false
    private var failure: (any Error)?
    /// Adders waiting for room in `pending`, and flushers waiting for everything to be stored.
    private var roomWaiters: [CheckedContinuation<Void, Never>] = []
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    private static let queue = DispatchQueue(label: "MediaBox.batchStore")

    public init(mediaBox: MediaBox, durability: MediaBox.BatchDurability = .batch, maxBytes: Int = 32 << 20, maxCount: Int = 256) {
        self.mediaBox = mediaBox
        self.durability = durability
        self.maxBytes = maxBytes
        self.maxCount = maxCount
    }

    /// Queues `data` to be stored as the complete resource `id` with `info`.
    public func add(_ id: MediaResourceId, _ data: Data, info: MediaResourceStorageInfo) async throws {
        if let failure { throw failure }
        // Backpressure: the next batch is full while one is being stored.
        while storing, bytes >= maxBytes || pending.count >= maxCount {
            await withCheckedContinuation { roomWaiters.append($0) }
            if let failure { throw failure }
        }
        pending.append((id, data))
        infos[id] = info
        bytes += data.count
        if !storing { startBatch() }
    }

    /// Waits until every added item is stored; throws the first failure.
    public func flush() async throws {
        while storing || !pending.isEmpty {
            if !storing {
                if failure != nil { break }
                startBatch()
                continue
            }
            await withCheckedContinuation { idleWaiters.append($0) }
        }
        if let failure { throw failure }
    }

    private func startBatch() {
        guard !storing, !pending.isEmpty, failure == nil else { return }
        storing = true
        let items = pending
        let infos = self.infos
        pending = []
        self.infos = [:]
        bytes = 0
        let (mediaBox, durability) = (self.mediaBox, self.durability)
        let rooms = roomWaiters
        roomWaiters = []
        for r in rooms { r.resume() }
        Self.queue.async {
            let result = Result { _ = try mediaBox.storeBatch(items, info: { infos[$0] ?? MediaResourceStorageInfo() }, durability: durability) }
            Task { await self.batchDone(result) }
        }
    }

    private func batchDone(_ result: Result<Void, any Error>) {
        storing = false
        if case .failure(let e) = result, failure == nil { failure = e }
        if failure == nil, !pending.isEmpty {
            startBatch()
        } else {
            if failure != nil {
                pending = []
                infos = [:]
                bytes = 0
            }
            let rooms = roomWaiters
            roomWaiters = []
            for r in rooms { r.resume() }
        }
        if !storing {
            let idle = idleWaiters
            idleWaiters = []
            for w in idle { w.resume() }
        }
    }
}
