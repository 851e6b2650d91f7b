import Foundation

/// What `MultipartUpload.upload(itemIds:)` did.
public struct MultipartUploadBatchReport: Sendable {
    /// Every item's result, in the order given.
    public var results: [MultipartUploadResult]
    /// The files in flight the batch settled on.
    public var filesInFlight: AdaptiveConcurrency.Snapshot
}

extension MultipartUpload {
    /// Uploads many items, each as `upload(itemId:)` does, with as many in flight as the
    /// measured throughput calls for (`AdaptiveConcurrency`, from `initialFiles` up to
    /// `maxConcurrentFiles`): a small file costs two round trips (its parts, then `sendMedia`),
    /// so a far server needs many files in flight where a near one needs few. The first failure
    /// cancels the rest and is thrown.
    public func upload(itemIds: [Int64], initialFiles: Int = 16, maxConcurrentFiles: Int = 128) async throws -> MultipartUploadBatchReport {
        let window = AdaptiveConcurrency(initial: initialFiles, ceiling: maxConcurrentFiles)
        var results = [MultipartUploadResult?](repeating: nil, count: itemIds.count)
        try await withThrowingTaskGroup(of: (Int, MultipartUploadResult).self) { group in
            var next = 0, running = 0
            func startFiles() {
                while running < window.limit, next < itemIds.count {
                    let index = next, id = itemIds[next]
                    next += 1
                    running += 1
                    group.addTask { (index, try await self.upload(itemId: id)) }
                }
            }
            startFiles()
            while running > 0, let (index, result) = try await group.next() {
                running -= 1
                results[index] = result
                window.completed(bytes: result.bytesSent, windowFull: next < itemIds.count)
                startFiles()
            }
        }
        return MultipartUploadBatchReport(results: results.compactMap { $0 }, filesInFlight: window.snapshot)
    }
}
