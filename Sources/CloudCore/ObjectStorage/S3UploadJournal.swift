import ConfinedFiles
import Foundation

/// What a multipart upload to S3 has had acknowledged, kept in a small JSON file beside the
/// upload's caller so that a process killed midway resumes with only the missing parts.
///
/// Each part's SHA-256 is jobrun's own (an S3 ETag is opaque): on resume, a part is reused only
/// when the service still lists it with the recorded size *and* the local file's bytes still
/// hash to the recorded value. The file is written atomically (temp file + rename), mode 0600,
/// beneath the descriptor of the directory that holds it.
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

    /// Where a journal lives: a file name in a directory held open, so the journal is read,
    /// written and removed beneath that directory's descriptor (no link followed, no FIFO
    /// opened).
    public struct Location: Sendable {
        public let directory: ConfinedDirectory
        public let name: String

        public init(_ name: String, in directory: ConfinedDirectory) {
            self.directory = directory
            self.name = name
        }

        /// The journal at `path`, a place the caller chose outside any data root (a tool's
        /// working directory): its folder is opened as given and created when missing.
        public init(path: String) throws {
            let folder = (path as NSString).deletingLastPathComponent
            self.directory = try ConfinedDirectory.open(
                path: folder.isEmpty ? "." : folder, create: true, policy: ConfinementPolicy(allowInsecure: true))
            self.name = (path as NSString).lastPathComponent
        }

        /// The journal's path, for messages.
        public var path: String { directory.display(name) }
    }

    /// The journal at `location`, or `nil` when there is none (or it cannot be read: the upload
    /// then starts over, which is always safe).
    public static func load(_ location: Location) -> S3UploadJournal? {
        guard let bytes = (try? location.directory.readContents(location.name, limit: 16 << 20)) ?? nil else { return nil }
        return try? JSONDecoder().decode(S3UploadJournal.self, from: Data(bytes))
    }

    /// Writes the journal to `location` atomically, readable by its owner only.
    public func save(_ location: Location) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(self)
        try location.directory.replaceContents(location.name, with: [UInt8](data))
    }

    /// Removes the journal at `location` (the upload completed or was abandoned).
    public static func remove(_ location: Location) {
        _ = try? location.directory.removeFile(location.name)
    }
}
