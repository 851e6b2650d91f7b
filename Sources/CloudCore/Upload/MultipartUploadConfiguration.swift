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
    /// Most parts in flight per big-file upload (Telegram's datacenters allow 30); how many
    /// are, follows the measured throughput (`AdaptiveConcurrency`).
    public var partsInFlight: Int = 30
    /// Parts in flight per small-file upload (at most 20 parts of 512 KiB).
    public var smallFilePartsInFlight: Int = 8
    /// Pipelined send for small files (not secret ones): `sendMedia` goes out as soon as the
    /// last part has been handed to the transport, with `SendMediaRequest.partsWaitMs`, instead
    /// of after every part's answer, so a small file costs one round trip instead of two. The
    /// server checks the file's SHA-256 from enqueue time, so a file changed meanwhile is
    /// refused (`CHECKSUM_INVALID`), never sent.
    public var pipelinesSendMedia: Bool = true
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
