import Foundation

/// What an upload did, for logs and progress. Ids and counts only: never a key, IV or token.
public enum MultipartUploadEvent: Sendable {
    /// Parts are about to be sent (`alreadyAcknowledged` of `totalParts` were sent by an earlier
    /// attempt; `committedOffset` is the end of the contiguous acknowledged prefix, in bytes).
    case started(
        item: Int64, fileId: Int64, totalParts: Int, partSize: Int, alreadyAcknowledged: Int, committedOffset: Int64,
        big: Bool, secret: Bool)
    /// One part was acknowledged by the server and recorded in Postbox.
    case partSent(item: Int64, part: Int, bytes: Int)
    /// The server had lost the parts (or refused them): starting again under a new file id.
    case restarted(item: Int64, oldFileId: Int64, newFileId: Int64, reason: String)
    /// The file was attached to message `messageId`.
    case sent(item: Int64, messageId: Int32, partsSent: Int, bytesSent: Int64)
}

/// The outcome of a finished upload.
public struct MultipartUploadResult: Sendable, Equatable {
    public var itemId: Int64
    public var messageId: Int32
    /// The new document's id on the server (0 if the item was already sent before this call).
    public var documentId: Int64
    /// The upload file id the parts were sent under.
    public var fileId: Int64
    /// Parts sent by this call.
    public var partsSent: Int
    /// Parts not sent because an earlier attempt had them acknowledged.
    public var partsSkipped: Int
    /// Bytes of parts sent by this call.
    public var bytesSent: Int64
    /// Restarts with a new file id.
    public var restarts: Int
    /// The item was already sent before this call (nothing was done).
    public var alreadySent: Bool
    /// Parts in flight the last attempt settled on (they follow the measured throughput); nil
    /// when no part was sent.
    public var partsInFlight: AdaptiveConcurrency.Snapshot? = nil

    public init(
        itemId: Int64, messageId: Int32, documentId: Int64, fileId: Int64, partsSent: Int, partsSkipped: Int,
        bytesSent: Int64, restarts: Int, alreadySent: Bool
    ) {
        self.itemId = itemId
        self.messageId = messageId
        self.documentId = documentId
        self.fileId = fileId
        self.partsSent = partsSent
        self.partsSkipped = partsSkipped
        self.bytesSent = bytesSent
        self.restarts = restarts
        self.alreadySent = alreadySent
    }
}
