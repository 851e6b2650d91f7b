import CloudCrypto
import ConfinedFiles
import Foundation
import Postbox

#if canImport(Glibc)
    import Glibc
#endif

/// What to enqueue.
public struct UploadRequest: Sendable {
    /// The file to upload (staged into the data root at enqueue time).
    public var path: String
    public var peerId: Int64
    /// Encrypt for a secret chat (AES-256-IGE, random key and IV).
    public var secret: Bool
    public var caption: String
    /// The file name the message shows (default: the source's last path component).
    public var name: String?
    public var mimeType: String?
    public var staging: UploadStaging

    public init(
        path: String, peerId: Int64, secret: Bool = false, caption: String = "", name: String? = nil,
        mimeType: String? = nil, staging: UploadStaging = .auto
    ) {
        self.path = path
        self.peerId = peerId
        self.secret = secret
        self.caption = caption
        self.name = name
        self.mimeType = mimeType
        self.staging = staging
    }
}

/// The persistent upload queue of one account: enqueueing (validation and staging into
/// `<account>/uploads/`), leasing items to uploaders, and settling them after an attempt.
///
/// Item states: `queued` (waiting, possibly until `notBefore`) → `uploading` (leased; parts
/// being sent) → `sent` (with the message id) or `failed` (with the reason). A failed attempt
/// that may succeed later goes back to `queued` with a backoff; nothing is ever dropped.
public final class UploadQueue: Sendable {
    public let postbox: Postbox
    /// `<root>/account-<id>/uploads` (created 0700).
    public let directory: String
    /// Where enqueued bytes wait when not in `directory` (e.g. a bucket); `nil`: local staging.
    public let stageSource: (any UploadStageSource)?

    /// `directory` held open, when the caller reached it beneath the data root.
    private let uploads: ConfinedDirectory?

    public init(postbox: Postbox, directory: String, stageSource: (any UploadStageSource)? = nil) {
        self.postbox = postbox
        self.directory = directory
        self.stageSource = stageSource
        self.uploads = nil
    }

    /// A queue staging into `uploads`, a folder the caller holds open (reached beneath the data
    /// root without following links): every staged file is created, renamed and removed
    /// beneath its descriptor.
    public init(postbox: Postbox, uploads: ConfinedDirectory, stageSource: (any UploadStageSource)? = nil) {
        self.postbox = postbox
        self.directory = uploads.path
        self.stageSource = stageSource
        self.uploads = uploads
    }

    /// The staging folder, held open, for the sender of this queue's items (`MultipartUpload`).
    public func stagingFolder() async throws -> ConfinedDirectory { try await UploadIO.run { try self.uploadsDirectory() } }

    /// The uploads folder, held open (created 0700 when missing).
    func uploadsDirectory() throws -> ConfinedDirectory {
        if let uploads { return uploads }
        do { return try ConfinedDirectory.open(path: directory, create: true) } catch {
            throw MultipartUploadError.staging(path: directory, reason: "cannot create the uploads directory: \(error.description)")
        }
    }

    /// Validates the file and the peer, stages the file into the uploads directory (hard link or
    /// 0600 copy), records its size and SHA-256, and adds a `queued` item with a fresh client
    /// random id. Throws `MultipartUploadError` with a clear reason for a missing, unreadable,
    /// empty or too large file, or a peer that is not among the synced peers (when Postbox has
    /// synced any; otherwise the peer is checked against the server before the first part).
    public func enqueue(_ request: UploadRequest) async throws -> UploadItem {
        if let stageSource {
            try await checkPeers([request.peerId])
            return try await enqueue(request, into: stageSource)
        }
        return try await enqueue([request])[0]
    }

    /// Enqueues several files at once, all or none: each is checked and staged as by
    /// `enqueue(_:)` (on every core), then every item is added in **one** write transaction.
    /// The first file refused throws (naming it) and leaves no item and no staged file behind.
    /// Items get ids in the order of `requests`. With a stage source the files are stored there
    /// one after the other, each in its own transaction.
    public func enqueue(_ requests: [UploadRequest]) async throws -> [UploadItem] {
        try await checkPeers(Set(requests.map(\.peerId)))
        if let stageSource {
            var out: [UploadItem] = []
            for request in requests { out.append(try await enqueue(request, into: stageSource)) }
            return out
        }
        guard !requests.isEmpty else { return [] }
        let dir = directory
        let temporaries = requests.map { _ in ".staging-\(UUID().uuidString)" }
        let uploads = try await UploadIO.run { try self.uploadsDirectory() }
        let staged = try await UploadIO.run { () throws -> [StagedCopy] in
            try UploadStager.stage(requests, into: uploads, temporaries: temporaries)
        }
        do {
            return try await postbox.transaction { tx in
                let queue = try tx.uploadQueue
                var items: [UploadItem] = []
                items.reserveCapacity(requests.count)
                var renamed: [String] = []
                do {
                    for (index, request) in requests.enumerated() {
                        let id = try queue.nextItemId()
                        let final = uploads.display("\(id)")
                        let copy = staged[index]
                        // A linked file untouched since its hash (the same change time) keeps
                        // its identity across the rename, which moves the change time itself.
                        let untouched =
                            copy.ctimeNs != nil && UploadStager.changeTime(of: temporaries[index], in: uploads, inode: copy.inode) == copy.ctimeNs
                        do throws(ConfinedFileError) { try uploads.rename(temporaries[index], to: "\(id)") } catch {
                            throw MultipartUploadError.staging(path: request.path, reason: "cannot rename into \(dir): \(error.description)")
                        }
                        renamed.append("\(id)")
                        var item = UploadItem(
                            id: id, peerId: PeerId(request.peerId), stagedPath: final,
                            originalName: request.name ?? (request.path as NSString).lastPathComponent,
                            size: copy.size, sha256: copy.sha256, caption: request.caption, isSecret: request.secret,
                            randomId: SecureRandom.int64(), enqueuedAt: MultipartUpload.nowMs())
                        item.stagedMtimeNs = copy.mtimeNs
                        if untouched, let ctime = UploadStager.changeTime(of: "\(id)", in: uploads, inode: copy.inode) {
                            item.stagedInode = copy.inode
                            item.stagedChangeTimeNs = ctime
                        }
                        item.staging = copy.linked ? .link : .copy
                        copy.container?.record(into: &item)
                        item.mimeType = request.mimeType
                        try queue.set(item)
                        items.append(item)
                    }
                } catch {
                    // The transaction rolls back: no item may keep a staged file.
                    for name in renamed { _ = try? uploads.removeFile(name) }
                    throw error
                }
                return items
            }
        } catch {
            // Rolled back: no item refers to a staged file, renamed or not.
            _ = try? await UploadIO.run { for t in temporaries { _ = try? uploads.removeFile(t) } }
            throw error
        }
    }

    /// Refuses peers that are not among the peers synced into Postbox (when any are).
    private func checkPeers(_ peerIds: Set<Int64>) async throws {
        let problem = try await postbox.read { tx -> (Int64, String)? in
            let peers = try tx.peers
            let count = try peers.count()
            guard count > 0 else { return nil }
            for id in peerIds.sorted() where try peers.get(PeerId(id)) == nil {
                return (id, "not among the \(count) peers synced into this account's Postbox")
            }
            return nil
        }
        if let (peerId, reason) = problem { throw MultipartUploadError.peerNotFound(peerId: peerId, reason: reason) }
    }

    /// Enqueue through a stage source: the bytes go there, the item records their size, SHA-256
    /// and the source's fields, and `stagedPath` names where `upload-queue` fetches them to.
    private func enqueue(_ request: UploadRequest, into source: any UploadStageSource) async throws -> UploadItem {
        let dir = directory
        let uploads = try await UploadIO.run { () throws -> ConfinedDirectory in
            let uploads = try self.uploadsDirectory()
            _ = try UploadStager.validate(source: request.path, secret: request.secret)
            return uploads
        }
        // A secret file leaves the host only as its encrypted container.
        var container: SecretStagedContainer?
        var temporary: String?
        if request.secret {
            let name = ".staging-\(UUID().uuidString)"
            container = try await UploadIO.run { () throws -> SecretStagedContainer in
                let input = Glibc.open(request.path, O_RDONLY | O_CLOEXEC)
                guard input >= 0 else { throw MultipartUploadError.fileUnreadable(path: request.path, reason: UploadIO.describe(errno)) }
                defer { close(input) }
                let size = try UploadIO.stat(fd: input).size
                return try SecretStagedContainer.write(input: input, source: request.path, size: size, to: name, in: uploads)
            }
            temporary = name
        }
        defer { if let temporary { _ = try? uploads.removeFile(temporary) } }
        // What is stored is read through one descriptor: the container beneath the uploads
        // folder's descriptor, or the operator's file (outside the data root).
        let storedPath = temporary.map { uploads.display($0) } ?? request.path
        let input = try await UploadIO.run { [temporary] () throws -> Int32 in
            if let temporary {
                do throws(ConfinedFileError) { return try uploads.openFile(temporary, .read) } catch {
                    throw MultipartUploadError.staging(path: request.path, reason: "cannot reopen its container: \(error.description)")
                }
            }
            let fd = Glibc.open(request.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { throw MultipartUploadError.fileUnreadable(path: request.path, reason: UploadIO.describe(errno)) }
            return fd
        }
        defer { close(input) }
        let stored = try await source.store(file: input, path: storedPath, scratch: uploads)
        let name = request.name ?? (request.path as NSString).lastPathComponent
        let staged = container
        return try await postbox.transaction { tx in
            let queue = try tx.uploadQueue
            let id = try queue.nextItemId()
            var item = UploadItem(
                id: id, peerId: PeerId(request.peerId), stagedPath: (dir as NSString).appendingPathComponent("\(id)"),
                originalName: name, size: staged?.key.decryptedSize ?? stored.size,
                sha256: staged?.plaintextSHA256 ?? stored.sha256, caption: request.caption,
                isSecret: request.secret, randomId: SecureRandom.int64(), enqueuedAt: MultipartUpload.nowMs())
            item.staging = stored.location
            staged?.record(into: &item)
            item.mimeType = request.mimeType
            try queue.set(item)
            return item
        }
    }

    /// Makes sure a leased item's bytes are in this host's uploads directory: an item whose bytes
    /// the stage source holds is fetched (and checked) into `<uploads>/<id>` unless a checked copy
    /// is already there, and its `stagedPath` is pointed at it. Returns the item as stored.
    public func materialize(_ item: UploadItem) async throws -> UploadItem {
        guard let stageSource, stageSource.holds(item) else { return item }
        let dir = directory
        let local = (dir as NSString).appendingPathComponent("\(item.id)")
        let present = try await UploadIO.run { () throws -> Bool in
            try self.uploadsDirectory().status("\(item.id)") != nil
        }
        if !present { try await stageSource.fetch(item, to: "\(item.id)", in: uploadsDirectory()) }
        guard item.stagedPath != local else { return item }
        return try await postbox.transaction { tx in
            let queue = try tx.uploadQueue
            guard var stored = try queue.get(item.id) else { throw MultipartUploadError.itemNotFound(item.id) }
            stored.stagedPath = local
            try queue.set(stored)
            return stored
        }
    }

    /// Removes the bytes a stage source holds for a sent item and clears its fields; a failure
    /// leaves them for `sweep` to retry.
    private func release(_ item: UploadItem, from source: any UploadStageSource) async {
        guard source.holds(item), (try? await source.remove(item)) != nil else { return }
        _ = try? await postbox.transaction { tx in
            let queue = try tx.uploadQueue
            guard var stored = try queue.get(item.id) else { return }
            stored.staging = stored.staging?.released
            try queue.set(stored)
        }
    }

    /// The items still to send (queued or uploading), in enqueue order, read through the open-item
    /// index: the sent and failed items the queue keeps are not read.
    public func openItems() async throws -> [UploadItem] {
        try await postbox.read { tx in
            var out: [UploadItem] = []
            try tx.uploadQueue.scanOpen {
                out.append($0)
                return true
            }
            return out
        }
    }

    /// Every item, in enqueue order.
    public func items() async throws -> [UploadItem] {
        try await postbox.read { tx in
            var out: [UploadItem] = []
            try tx.uploadQueue.scan {
                out.append($0); return true
            }
            return out
        }
    }

    /// Crash-loop protection: an item whose attempts ended this many times in a row without
    /// settling (the uploader died while sending it each time) fails with that reason instead of
    /// taking the uploader down again. Such interruptions never count as the item's attempts.
    public static let maxInterruptions = 10

    /// What `claim` found.
    public enum Claim: Sendable {
        /// An item now leased to the caller (its `attempts` already counts this attempt).
        case item(UploadItem)
        /// Nothing to do now; the earliest item waiting for its backoff is due at this Unix ms.
        case waiting(until: Int64)
        /// Nothing left to upload (or everything left is leased by live processes).
        case none
    }

    /// Leases the first item that is due (state `queued` or `uploading` whose lease expired or
    /// whose holder died), in one write transaction: `BEGIN IMMEDIATE` serialises processes, so
    /// two uploaders never get the same item. Items in `excluding` are skipped.
    ///
    /// An item found `uploading` is one whose last attempt never settled — its process was
    /// killed or crashed, or its lease ran out. That is not the item's fault: the attempt is
    /// given back (`attempts` counts only attempts that ended in a failure of the item) and
    /// counted in the item's `interruptions` instead; after `maxInterruptions` in a row the item
    /// fails (crash-loop protection).
    public func claim(lease: UploadLease, excluding: Set<Int64> = [], now: Int64 = MultipartUpload.nowMs()) async throws -> Claim {
        try await postbox.transaction { tx in
            let queue = try tx.uploadQueue
            var found: UploadItem?
            var earliest: Int64?
            var crashLooping: [UploadItem] = []
            try queue.scanOpen { item in
                guard !excluding.contains(item.id) else { return true }
                // Leased and the lease is live (this process's other workers included): not ours.
                if !item.leaseHolder.isEmpty, item.leaseUntil > now, UploadLeaseHolder.isAlive(item.leaseHolder) {
                    return true
                }
                if item.state == .uploading, item.interruptions + 1 >= Self.maxInterruptions {
                    crashLooping.append(item)
                    return true
                }
                if item.notBefore > now {
                    earliest = min(earliest ?? item.notBefore, item.notBefore)
                    return true
                }
                found = item
                return false
            }
            for var looping in crashLooping {
                looping.interruptions += 1
                let count = looping.interruptions
                looping.attempts = max(0, looping.attempts - 1)
                looping.leaseHolder = ""
                looping.leaseUntil = 0
                looping.state = .failed
                looping.failureReason =
                    "the uploading process ended \(count) times in a row while sending this item (killed or crashed each time); failed to stop a crash loop — re-enqueue it to try again"
                try queue.set(looping)
            }
            guard var item = found else { return earliest.map { .waiting(until: $0) } ?? .none }
            if item.state == .uploading {
                item.attempts = max(0, item.attempts - 1)  // the unsettled attempt was not the item's failure
                item.interruptions += 1
            }
            item.leaseHolder = lease.holder
            item.leaseUntil = now + lease.durationMs
            item.attempts += 1
            item.state = .uploading
            try queue.set(item)
            return .item(item)
        }
    }

    /// How an attempt ended, for `settle`.
    public enum Outcome: Sendable {
        /// Try again after `backoff` seconds (doubled per earlier attempt), unless the item has
        /// used `maxAttempts`; then it fails with `reason`.
        case retry(reason: String, backoff: Double, maxAttempts: Int)
        /// Fail for good with `reason`.
        case failed(reason: String)
        /// Interrupted (cancelled, shutting down): back to `queued` at once, this attempt not counted.
        case interrupted
        /// The cloud is unreachable: back to `queued` after `backoff` seconds, this attempt not
        /// counted (an outage must not use up an item's attempts).
        case cloudUnavailable(reason: String, backoff: Double)
    }

    /// Records the end of an attempt and drops the lease — only if `lease` still holds the item.
    /// Returns the item's new state (nil if the lease had passed to someone else).
    @discardableResult
    public func settle(_ itemId: Int64, lease: UploadLease, outcome: Outcome, now: Int64 = MultipartUpload.nowMs()) async throws -> UploadItem.State? {
        try await postbox.transaction { tx in
            let queue = try tx.uploadQueue
            guard var item = try queue.get(itemId), item.leaseHolder == lease.holder else { return nil }
            if item.state == .sent { return .sent }
            item.interruptions = 0  // the attempt settled: no crash loop
            item.leaseHolder = ""
            item.leaseUntil = 0
            switch outcome {
            case let .retry(reason, backoff, maxAttempts):
                item.failureReason = reason
                if Int(item.attempts) >= maxAttempts {
                    item.state = .failed
                    item.failureReason = "\(reason) (gave up after \(item.attempts) attempts)"
                } else {
                    item.state = .queued
                    let delay = CloudRetryPolicy.exponentialDelay(Int(item.attempts), base: backoff, max: 86_400)
                    item.notBefore = now + Int64(delay * 1000)
                }
            case .failed(let reason):
                item.state = .failed
                item.failureReason = reason
            case .interrupted:
                item.state = .queued
                item.attempts = max(0, item.attempts - 1)
            case let .cloudUnavailable(reason, backoff):
                item.state = .queued
                item.failureReason = reason
                item.attempts = max(0, item.attempts - 1)
                item.notBefore = now + Int64(min(86_400, backoff) * 1000)
            }
            try queue.set(item)
            return item.state
        }
    }

    /// Removes the staged file of a sent item (the server has the bytes now).
    public func removeStagedFile(of item: UploadItem) async {
        if let stageSource { await release(item, from: stageSource) }
        let path = item.stagedPath
        guard path.hasPrefix(directory + "/") else { return }
        let name = String(path.dropFirst(directory.count + 1))
        _ = try? await UploadIO.run { try self.uploadsDirectory().removeFile(name) }
    }

    /// Removes what a crash can leave behind: staged files of items already sent (the process
    /// died between the `sent` commit and the unlink) and `.staging-*` files older than an hour
    /// (an enqueue that died before its commit), fetched copies and store journals left by a
    /// killed process (`*.fetching` older than an hour, `.s3-enqueue-*` older than a day). With a
    /// stage source, the bytes it still holds for sent items are released, and bytes no item
    /// refers to that are older than a day are removed there (not counted; a stage source that
    /// cannot be reached is left for the next sweep). Returns the number of files removed.
    @discardableResult
    public func sweep(now: Date = Date()) async throws -> Int {
        let source = stageSource
        let (sent, held) = try await postbox.read { tx -> ([String], [UploadItem]) in
            var out: [String] = []
            var held: [UploadItem] = []
            try tx.uploadQueue.scan { item in
                if item.state == .sent { out.append(item.stagedPath) }
                if let source, source.holds(item) { held.append(item) }
                return true
            }
            return (out, held)
        }
        if let source {
            for item in held where item.state == .sent { await release(item, from: source) }
            try? await source.sweep(keeping: held.filter { $0.state != .sent }, olderThan: now.addingTimeInterval(-86_400))
        }
        let dir = directory
        return try await UploadIO.run {
            var removed = 0
            let uploads = try self.uploadsDirectory()
            for path in sent where path.hasPrefix(dir + "/") {
                if (try? uploads.removeFile(String(path.dropFirst(dir.count + 1)))) == true { removed += 1 }
            }
            for name in uploads.entries() {
                let age: Double
                if name.hasPrefix(".staging-") || name.hasSuffix(".fetching") {
                    age = 3600
                } else if name.hasPrefix(".s3-enqueue-") {
                    age = 86_400
                } else {
                    continue
                }
                let modified = (try? uploads.status(name)).flatMap { $0 }.map { Date(timeIntervalSince1970: TimeInterval($0.st_mtim.tv_sec)) } ?? now
                if now.timeIntervalSince(modified) > age, (try? uploads.removeFile(name)) == true { removed += 1 }
            }
            return removed
        }
    }
}
