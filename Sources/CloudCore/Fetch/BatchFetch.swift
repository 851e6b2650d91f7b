import Foundation
import MediaBox

/// What `MultipartFetch.fetchBatch` did.
public struct BatchFetchReport: Sendable, Equatable {
    /// Resources downloaded and stored now.
    public var downloaded = 0
    /// Resources that were already complete in the MediaBox (nothing fetched).
    public var alreadyComplete = 0
    /// Bytes downloaded and stored.
    public var bytes: Int64 = 0
    public init() {}
}

extension MultipartFetch {
    /// Downloads many resources into `mediaBox` with durable, batched completion: small files
    /// (known size ≤ `smallFileLimit`) are fetched into memory and stored with
    /// `MediaBox.storeBatch` (one file-system sync per batch instead of an fsync per file, then
    /// each file linked into place — never a complete file with missing data; batches form as a
    /// group commit, see `BatchStore`); files of at most 1 MiB come in one request; larger ones are
    /// streamed through `mediaBox.fetch` into their partial files. Files in progress follow the
    /// fetcher's shared part limit, which follows the measured throughput: as many as parts may
    /// be in flight, and `filesAhead` more so that a finished part always finds the next file
    /// waiting, up to `maxConcurrentFiles`. Memory stays bounded by
    /// `maxConcurrentFiles × smallFileLimit + 2 × batchBytes`.
    public func fetchBatch(
        _ resources: [any CloudFetchableResource], into mediaBox: MediaBox,
        info: @escaping @Sendable (MediaResourceId) -> MediaResourceStorageInfo,
        smallFileLimit: Int64 = 1 << 20, maxConcurrentFiles: Int = 256, filesAhead: Int = 8,
        batchBytes: Int = 32 << 20, batchCount: Int = 256
    ) async throws -> BatchFetchReport {
        let store = BatchStore(mediaBox: mediaBox, info: info, maxBytes: batchBytes, maxCount: batchCount)
        var report = BatchFetchReport()
        try await withThrowingTaskGroup(of: (Int64, Bool).self) { group in
            var index = 0
            var running = 0
            func startNext() {
                guard index < resources.count else { return }
                let resource = resources[index]
                index += 1
                running += 1
                group.addTask {
                    let location = info(resource.id).location
                    if mediaBox.resourceData(resource.id, location: location)?.complete == true { return (0, false) }
                    if let size = resource.size, size <= smallFileLimit {
                        let data = try await self.fetchData(resource)
                        try await store.add(resource.id, data)
                        return (Int64(data.count), true)
                    }
                    let d = try await mediaBox.fetch(resource, info: info(resource.id))
                    return (d.size, true)
                }
            }
            let limiter = context.limiter
            func filesWanted() -> Int { max(1, min(maxConcurrentFiles, limiter.concurrency.limit + filesAhead)) }
            while running < filesWanted(), index < resources.count { startNext() }
            while running > 0, let (bytes, fetched) = try await group.next() {
                running -= 1
                if fetched { report.downloaded += 1; report.bytes += bytes } else { report.alreadyComplete += 1 }
                while running < filesWanted(), index < resources.count { startNext() }
            }
        }
        try await store.flush()
        return report
    }
}

/// Collects small downloaded files and stores them in batches off the cooperative pool, one
/// batch after the other, as a group commit: when no batch is being stored, whatever is pending
/// is stored at once (the first file does not wait for a batch to fill, the last ones do not wait
/// behind a half-empty batch); while one is being stored, the next accumulates, so batches grow
/// just as large as the disk needs to keep up (one sync each). An adder that finds the pending
/// batch full waits until it is taken, which keeps downloads from running far ahead of the disk.
actor BatchStore {
    private let mediaBox: MediaBox
    private let info: @Sendable (MediaResourceId) -> MediaResourceStorageInfo
    private let maxBytes: Int
    private let maxCount: Int
    private var pending: [(MediaResourceId, Data)] = []
    private var bytes = 0
    /// A batch is being stored on `queue`.
    private var storing = false
    private var failure: (any Error)?
    /// Adders waiting for room in `pending`, and flushers waiting for everything to be stored.
    private var roomWaiters: [CheckedContinuation<Void, Never>] = []
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    private static let queue = DispatchQueue(label: "MultipartFetch.batchStore")

    init(mediaBox: MediaBox, info: @escaping @Sendable (MediaResourceId) -> MediaResourceStorageInfo, maxBytes: Int, maxCount: Int) {
        self.mediaBox = mediaBox
        self.info = info
        self.maxBytes = maxBytes
        self.maxCount = maxCount
    }

    func add(_ id: MediaResourceId, _ data: Data) async throws {
        if let failure { throw failure }
        // Backpressure: the next batch is full while one is being stored.
        while storing, bytes >= maxBytes || pending.count >= maxCount {
            await withCheckedContinuation { roomWaiters.append($0) }
            if let failure { throw failure }
        }
        pending.append((id, data))
        bytes += data.count
        if !storing { startBatch() }
    }

    /// Waits until every added file is stored; throws the first failure.
    func flush() async throws {
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
        pending = []
        bytes = 0
        let mediaBox = self.mediaBox
        let info = self.info
        let rooms = roomWaiters
        roomWaiters = []
        for r in rooms { r.resume() }
        Self.queue.async {
            let result = Result { _ = try mediaBox.storeBatch(items, info: { info($0) }) }
            Task { await self.batchDone(result) }
        }
    }

    private func batchDone(_ result: Result<Void, any Error>) {
        storing = false
        if case .failure(let e) = result, failure == nil { failure = e }
        if failure == nil, !pending.isEmpty {
            startBatch()
        } else {
            if failure != nil { pending = []; bytes = 0 }
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

extension MultipartFetch {
    /// A fetcher with this one's part settings and reference revalidation, on another client —
    /// for a job that needs its own transport (a receive bandwidth cap) but must keep the
    /// account's shared revalidation (one revalidation per parent entity).
    public func reusingRevalidation(on client: CloudClient) -> MultipartFetch {
        let configuration = self.configuration
        return MultipartFetch(client: client, revalidator: context.revalidator) { $0 = configuration }
    }
}
