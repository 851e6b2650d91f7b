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
        let store = BatchStore(mediaBox: mediaBox, maxBytes: batchBytes, maxCount: batchCount)
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
                        try await store.add(resource.id, data, info: info(resource.id))
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

extension MultipartFetch {
    /// A fetcher with this one's part settings and reference revalidation, on another client —
    /// for a job that needs its own transport (a receive bandwidth cap) but must keep the
    /// account's shared revalidation (one revalidation per parent entity).
    public func reusingRevalidation(on client: CloudClient) -> MultipartFetch {
        let configuration = self.configuration
        return MultipartFetch(client: client, revalidator: context.revalidator) { $0 = configuration }
    }
}
