import ConfinedFiles
import Foundation
import Postbox

/// What a stage source kept of an enqueued file: its size, its SHA-256 (hex) and where it is,
/// recorded as the queue item's `staging`.
public struct StagedObject: Sendable, Equatable {
    public var size: Int64
    public var sha256: String
    public var location: UploadStagingLocation

    public init(size: Int64, sha256: String, location: UploadStagingLocation) {
        self.size = size
        self.sha256 = sha256
        self.location = location
    }
}

/// Where an enqueued file's bytes wait for `upload-queue` when they are not kept in the account's
/// uploads directory (for example a bucket the whole fleet reaches, so any host can send the
/// item). ``UploadQueue`` stores through it at enqueue, fetches a local copy before sending, and
/// removes the stored bytes once the item is sent.
public protocol UploadStageSource: Sendable {
    /// Stores the (already validated) open file `fd`, the file at `path` (for messages and to
    /// recognise a repeated call). `scratch` (0700, held open) may hold progress records that
    /// let a repeated call resume.
    func store(file fd: Int32, path: String, scratch: ConfinedDirectory) async throws -> StagedObject
    /// Whether `item`'s bytes are kept by this source.
    func holds(_ item: UploadItem) -> Bool
    /// Writes `item`'s bytes to a new file `name` (0600) in `directory`, created beneath its
    /// descriptor, and checks them against the item's size and SHA-256. Throws `MultipartUploadError`: `.fileChanged` for bytes that do not
    /// match, `.stagedFileMissing` when they are gone, `.cloudUnavailable` when the source cannot
    /// be reached; nothing is left at `name` after a failure.
    func fetch(_ item: UploadItem, to name: String, in directory: ConfinedDirectory) async throws
    /// Removes the stored bytes of `item` (removing bytes already gone succeeds).
    func remove(_ item: UploadItem) async throws
    /// Removes stored bytes that none of `items` refers to and that are older than `cutoff` (an
    /// enqueue that died before recording its item), and unfinished stores begun before it.
    func sweep(keeping items: [UploadItem], olderThan cutoff: Date) async throws
}
