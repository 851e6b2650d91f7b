import Foundation

/// What a multipart upload to S3 has had acknowledged, kept in a small JSON file beside the
/// upload's caller so that a process killed midway resumes with only the missing parts.
///
/// Each part's SHA-256 is jobrun's own (an S3 ETag is opaque): on resume, a part is reused only
/// when the service still lists it with the recorded size *and* the local file's bytes still
/// hash to the recorded value. The file is written atomically (temp file + rename), mode 0600.
public struct S3UploadJournal: Codable, Sendable, Equatable {
    public struct Part: Codable, Sendable, Equatable {
        public var size: Int64
        /// Hex SHA-256 of the part's bytes.
        public var sha256: String
        public var eTag: String

        public init(size: Int64, sha256: String, eTag: String) {
            self.size = size
            self.sha256 = sha256
            self.eTag = eTag
        }
    }

    public var key: String
    public var uploadId: String
    public var fileSize: Int64
    public var partSize: Int64
    /// By part number.
    public var parts: [Int: Part]
    /// The upload was created with SHA-256 checksums, so every part and the completion carry
    /// them; nil in a journal written before jobrun declared them (its upload has none).
    public var sha256Checksums: Bool?

    public init(key: String, uploadId: String, fileSize: Int64, partSize: Int64, parts: [Int: Part], sha256Checksums: Bool? = nil) {
        self.key = key
        self.uploadId = uploadId
        self.fileSize = fileSize
        self.partSize = partSize
        self.parts = parts
        self.sha256Checksums = sha256Checksums
    }

    /// The journal at `path`, or `nil` when there is none (or it cannot be read: the upload then
    /// starts over, which is always safe).
    public static func load(_ path: String) -> S3UploadJournal? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? JSONDecoder().decode(S3UploadJournal.self, from: data)
    }

    /// Writes the journal to `path` atomically, readable by its owner only.
    public func save(_ path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(self)
        let temp = path + ".tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw POSIXFailure(errno) }
        defer { close(fd) }
        try data.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let n = write(fd, raw.baseAddress! + done, raw.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw POSIXFailure(errno)
                }
                done += n
            }
        }
        guard fsync(fd) == 0 else { throw POSIXFailure(errno) }
        guard rename(temp, path) == 0 else { throw POSIXFailure(errno) }
    }

    /// Removes the journal at `path` (the upload completed or was abandoned).
    public static func remove(_ path: String) {
        unlink(path)
    }
}
