import Foundation

/// How long a queue item is leased to one uploader and under which name. The lease is checked
/// (and extended when half of it is used) in the same write transaction that records each
/// acknowledged part, and renewed on a timer while the upload waits on the server.
public struct UploadLease: Sendable, Equatable {
    /// Who holds it (`UploadLeaseHolder.current(run:)`).
    public var holder: String
    /// Seconds the lease lasts without renewal.
    public var duration: Double

    public init(holder: String, duration: Double) {
        self.holder = holder
        self.duration = duration
    }

    var durationMs: Int64 { Int64(duration * 1000) }
}

/// Settings of a `MultipartUpload`.
public struct MultipartUploadConfiguration: Sendable {
    /// Parts in flight per big-file upload (the seed's 30).
    public var partsInFlight: Int = 30
    /// Parts in flight per small-file upload (at most 80 parts of 128 KiB).
    public var smallFilePartsInFlight: Int = 8
    /// Spaces part requests and sends (a job's `requestRate`), shared by every upload using it.
    public var pacer: CloudRequestPacer? = nil
    /// The lease the caller holds on the item; nil when nothing else can touch the queue.
    public var lease: UploadLease? = nil
    /// Before the first part, make sure the peer exists (Postbox's synced peers, else one
    /// `messages.getHistory` call) so a typo does not cost a whole upload.
    public var checkPeer: Bool = true
    /// Restarts with a new file id when the server lost the parts (`FILE_PART_<n>_MISSING`),
    /// per `upload(itemId:)` call.
    public var maxRestarts: Int = 2

    public init() {}
}
