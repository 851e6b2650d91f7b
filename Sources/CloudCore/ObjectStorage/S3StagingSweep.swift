import Foundation

/// The maintenance pass over staged objects: aborts multipart uploads under a prefix that were
/// started before a cutoff (abandoned by a killed process; MinIO has no lifecycle rule for
/// them) and removes objects under the prefix, older than the cutoff, that nothing refers to any
/// more (an item sent but its object not yet deleted, an enqueue that died before recording its
/// item). Young uploads and objects are left alone: they may belong to an enqueue in progress.
public struct S3StagingSweep: Sendable {
    public let client: S3Client
    /// Only keys under this prefix are considered.
    public var prefix: String

    public init(client: S3Client, prefix: String) {
        self.client = client
        self.prefix = prefix
    }

    /// What one pass did.
    public struct Report: Sendable, Equatable {
        public var uploadsAborted = 0
        public var objectsRemoved = 0
        public var bytesRemoved: Int64 = 0
        /// Objects under the prefix still referenced, or too young to judge.
        public var objectsKept = 0

        public init(uploadsAborted: Int = 0, objectsRemoved: Int = 0, bytesRemoved: Int64 = 0, objectsKept: Int = 0) {
            self.uploadsAborted = uploadsAborted
            self.objectsRemoved = objectsRemoved
            self.bytesRemoved = bytesRemoved
            self.objectsKept = objectsKept
        }
    }

    /// Runs the pass: `referenced` are the keys still in use (queue items not yet sent),
    /// `activeUploads` the upload ids a live process is still sending (never aborted, whatever
    /// their age).
    public func run(olderThan cutoff: Date, referenced: Set<String>, activeUploads: Set<String> = []) async throws -> Report {
        var report = Report()
        for upload in try await client.listMultipartUploads(prefix: prefix) where !activeUploads.contains(upload.uploadId) {
            guard let started = Self.parseTimestamp(upload.initiated), started < cutoff else { continue }
            try await client.abortMultipartUpload(upload.key, uploadId: upload.uploadId)
            report.uploadsAborted += 1
        }
        for object in try await client.listAllObjects(prefix: prefix) {
            guard !referenced.contains(object.key), let modified = Self.parseTimestamp(object.lastModified), modified < cutoff
            else {
                report.objectsKept += 1
                continue
            }
            try await client.deleteObject(object.key)
            report.objectsRemoved += 1
            report.bytesRemoved += object.size
        }
        return report
    }

    /// S3's ISO 8601 timestamps, with or without fractional seconds.
    static func parseTimestamp(_ text: String) -> Date? {
        let withFraction = ISO8601DateFormatter()
        withFraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = withFraction.date(from: text) { return d }
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        return plain.date(from: text)
    }
}
