import Foundation

/// One file waiting in (or done with) the persistent upload queue.
///
/// The item records everything a resumed run needs: the staged copy of the file and its
/// fingerprint (to detect a change), the server-side file id and part layout, the client random
/// id that makes the final send idempotent, and the outcome. Acknowledged parts live in the
/// upload-parts table, one row per part, so each acknowledgement is a small durable write.
public struct UploadItem: PostboxCoding, Sendable, Equatable {
    public enum State: Int32, Sendable {
        case queued = 0, uploading = 1, sent = 2, failed = 3

        /// Still to be sent: queued, or being (or last being) uploaded.
        public var isOpen: Bool { self == .queued || self == .uploading }
    }

    public var id: Int64
    public var peerId: PeerId
    /// The staged file inside the data root (copied or hard-linked at enqueue time).
    public var stagedPath: String
    public var originalName: String
    public var size: Int64
    /// SHA-256 of the staged file at enqueue time (hex), to detect a change while queued.
    public var sha256: String
    public var caption: String
    public var isSecret: Bool
    public var state: State
    /// Server-side upload file id (random, chosen by the client); 0 until the upload starts.
    public var fileId: Int64
    public var partSize: Int32
    public var totalParts: Int32
    /// The client random id of the final send: retried sends never create a second message.
    public var randomId: Int64
    public var messageId: Int32?
    public var failureReason: String?
    public var attempts: Int32
    /// Unix milliseconds before which the item is not retried.
    public var notBefore: Int64
    /// Who is uploading it now and until when (Unix ms), so two processes never share an item.
    public var leaseHolder: String
    public var leaseUntil: Int64
    public var enqueuedAt: Int64
    /// A secret item's key material, once chosen (never printed: `SecretKeyMaterial`).
    public var secretKey: SecretKeyMaterial?
    /// Where the bytes were put at enqueue: a link or a copy in the uploads directory, or an
    /// object in a bucket (nil in a row written before it was recorded).
    public var staging: UploadStagingLocation?
    /// A secret item's key material as an earlier build stored it (hex text), until the
    /// uploader moves it into `secretKey` (never printed either).
    public var legacySecretKey: LegacySecretKeyText?
    /// The plaintext size a secret item's key was made for (with `secretKey`).
    public var secretDecryptedSize: Int64?
    /// SHA-256 (hex) of a secret item's encrypted container, when the container is what was
    /// staged (nil: the staged bytes are the plaintext).
    public var stagedContainerSHA256: String?
    /// Modification time (ns) of the staged file as last seen: at enqueue, and again when an
    /// upload finds it moved with the same bytes.
    public var stagedMtimeNs: Int64?
    /// Identity of a hard-linked staged file as staged: its inode and its change time (ns),
    /// which every write and every change of its metadata (a modification time set back
    /// included) moves on, and which no caller can set. While both are unchanged the bytes are
    /// the ones hashed at enqueue, so the upload need not hash the file again (nil: not
    /// recorded, as for a copy or a row written before; a linked file is then re-hashed).
    public var stagedInode: UInt64?
    public var stagedChangeTimeNs: Int64?
    /// The MIME type the message is sent with (nil: none given).
    public var mimeType: String?
    /// The server's document id, once sent.
    public var documentId: Int64?
    /// Attempts in a row that ended with their process gone (killed, crashed) or their lease run
    /// out, without settling.
    public var interruptions: Int

    public init(
        id: Int64, peerId: PeerId, stagedPath: String, originalName: String, size: Int64, sha256: String,
        caption: String = "", isSecret: Bool = false, randomId: Int64, enqueuedAt: Int64
    ) {
        self.id = id
        self.peerId = peerId
        self.stagedPath = stagedPath
        self.originalName = originalName
        self.size = size
        self.sha256 = sha256
        self.caption = caption
        self.isSecret = isSecret
        self.state = .queued
        self.fileId = 0
        self.partSize = 0
        self.totalParts = 0
        self.randomId = randomId
        self.messageId = nil
        self.failureReason = nil
        self.attempts = 0
        self.notBefore = 0
        self.leaseHolder = ""
        self.leaseUntil = 0
        self.enqueuedAt = enqueuedAt
        self.secretKey = nil
        self.staging = nil
        self.legacySecretKey = nil
        self.secretDecryptedSize = nil
        self.stagedContainerSHA256 = nil
        self.stagedMtimeNs = nil
        self.stagedInode = nil
        self.stagedChangeTimeNs = nil
        self.mimeType = nil
        self.documentId = nil
        self.interruptions = 0
    }

    public init(decoder d: PostboxDecoder) throws {
        id = d.decodeInt64(forKey: "id") ?? 0
        peerId = PeerId(d.decodeInt64(forKey: "peer") ?? 0)
        stagedPath = d.decodeString(forKey: "path") ?? ""
        originalName = d.decodeString(forKey: "name") ?? ""
        size = d.decodeInt64(forKey: "size") ?? 0
        sha256 = d.decodeString(forKey: "sha") ?? ""
        caption = d.decodeString(forKey: "cap") ?? ""
        isSecret = d.decodeBool(forKey: "sec") ?? false
        state = State(rawValue: d.decodeInt32(forKey: "st") ?? 0) ?? .queued
        fileId = d.decodeInt64(forKey: "fid") ?? 0
        partSize = d.decodeInt32(forKey: "ps") ?? 0
        totalParts = d.decodeInt32(forKey: "tp") ?? 0
        randomId = d.decodeInt64(forKey: "rid") ?? 0
        messageId = d.decodeInt32(forKey: "mid")
        failureReason = d.decodeString(forKey: "why")
        attempts = d.decodeInt32(forKey: "att") ?? 0
        notBefore = d.decodeInt64(forKey: "nb") ?? 0
        leaseHolder = d.decodeString(forKey: "lh") ?? ""
        leaseUntil = d.decodeInt64(forKey: "lu") ?? 0
        enqueuedAt = d.decodeInt64(forKey: "at") ?? 0
        let fields = UploadItemStringFields(d.decodeStringDictionary(keysKey: "xk", valuesKey: "xv"))
        staging = fields.staging
        legacySecretKey = fields.legacySecretKey
        secretDecryptedSize = fields.secretDecryptedSize
        stagedContainerSHA256 = fields.stagedContainerSHA256
        stagedMtimeNs = fields.stagedMtimeNs
        stagedInode = fields.stagedInode
        stagedChangeTimeNs = fields.stagedChangeTimeNs
        mimeType = fields.mimeType
        documentId = fields.documentId
        interruptions = fields.interruptions
        if let key = d.decodeBytes(forKey: "sk"), let iv = d.decodeBytes(forKey: "siv"), let padding = d.decodeBytes(forKey: "spad") {
            secretKey = SecretKeyMaterial(key: key, iv: iv, padding: padding)
        } else {
            secretKey = nil
        }
    }

    public func encode(_ e: PostboxEncoder) {
        e.encode(id, forKey: "id")
        e.encode(peerId.rawValue, forKey: "peer")
        e.encode(stagedPath, forKey: "path")
        e.encode(originalName, forKey: "name")
        e.encode(size, forKey: "size")
        e.encode(sha256, forKey: "sha")
        e.encode(caption, forKey: "cap")
        e.encode(isSecret, forKey: "sec")
        e.encode(state.rawValue, forKey: "st")
        e.encode(fileId, forKey: "fid")
        e.encode(partSize, forKey: "ps")
        e.encode(totalParts, forKey: "tp")
        e.encode(randomId, forKey: "rid")
        e.encodeIfPresent(messageId, forKey: "mid")
        e.encodeIfPresent(failureReason, forKey: "why")
        e.encode(attempts, forKey: "att")
        e.encode(notBefore, forKey: "nb")
        e.encode(leaseHolder, forKey: "lh")
        e.encode(leaseUntil, forKey: "lu")
        e.encode(enqueuedAt, forKey: "at")
        e.encode(UploadItemStringFields.entries(of: self), keysKey: "xk", valuesKey: "xv")
        if let secretKey {
            e.encode(secretKey.key, forKey: "sk")
            e.encode(secretKey.iv, forKey: "siv")
            e.encode(secretKey.padding, forKey: "spad")
        }
    }
}
