import Foundation

/// What `MultipartUpload.upload(itemIds:)` did.
public struct MultipartUploadBatchReport: Sendable {
    /// Every item's result, in the order given.
    public var results: [MultipartUploadResult]
    /// The files in flight the batch settled on.
    public var filesInFlight: AdaptiveConcurrency.Snapshot
}

extension MultipartUpload {
    /// The most files `upload(itemIds:)` keeps in flight by default.
    public static let maxConcurrentFiles = 128

    /// Uploads many items, each as `upload(itemId:)` does, with as many in flight as the
    /// measured throughput calls for (`AdaptiveConcurrency`, from `initialFiles` up to
    /// `maxConcurrentFiles`): a small file costs two round trips (its parts, then `sendMedia`),
    /// so a far server needs many files in flight where a near one needs few. The first failure
    /// cancels the rest and is thrown.
    public func upload(
        itemIds: [Int64], initialFiles: Int = 16, maxConcurrentFiles: Int = MultipartUpload.maxConcurrentFiles
    ) async throws -> MultipartUploadBatchReport {
        let window = AdaptiveConcurrency(initial: initialFiles, ceiling: maxConcurrentFiles)
        let results = try await window.map(itemIds) { id in
            let result = try await self.upload(itemId: id)
            return (result, result.bytesSent)
        }
        return MultipartUploadBatchReport(results: results, filesInFlight: window.snapshot)
    }
}
