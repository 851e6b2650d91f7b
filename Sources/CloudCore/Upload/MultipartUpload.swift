import CloudCrypto
import CloudProtocol
import ConfinedFiles
import Foundation
import Postbox
import Synchronization

/// Uploads one queue item in parts and attaches it to a message (the seed's MultipartUpload,
/// made resumable).
///
/// - Layout: `UploadPlan` (512 KiB parts, in small-file mode up to 10 MiB, then in big-file
///   mode with `totalParts`), several parts in flight (30 for big files).
/// - Bounded memory: plain parts go out as file regions (`pread` by the transport); secret parts
///   are encrypted one at a time into buffers, at most `partsInFlight` of them alive.
/// - Durable progress: every acknowledged part is a row in Postbox (`UploadQueueTable`), written
///   after the server's answer; a later call sends only the parts without a row.
/// - Dropped uploads: `FILE_PART_<n>_MISSING` (or `FILE_PARTS_INVALID`) at the final send
///   means the server no longer has the parts: forget the rows and start again under a new file id.
/// - Idempotent completion: `messages.sendMedia` with the item's client random id, so a send
///   retried after a crash returns the first message instead of creating a second.
/// - Secret chats: AES-256-IGE with a random key and IV stored in the item (Postbox only), the
///   last block padded with stored random bytes, the key fingerprint and decrypted size recorded;
///   the container is deterministic per item, so a resumed upload re-sends identical bytes. An
///   item staged as a copy was staged as its container already (`SecretStagedContainer`) and
///   is sent as it is.
/// - Change detection: the staged file's size, modification time and SHA-256 are checked
///   against the values from enqueue time; plain uploads also give the server the SHA-256, which
///   it verifies on assembly (`CHECKSUM_INVALID`).
///
/// ```swift
/// let upload = MultipartUpload(client: client, postbox: postbox)
/// let result = try await upload.upload(itemId: id)   // resumes where a previous attempt stopped
/// ```
public final class MultipartUpload: Sendable {
    public let client: CloudClient
    public let postbox: Postbox
    public let configuration: MultipartUploadConfiguration
    private let observer: (@Sendable (MultipartUploadEvent) -> Void)?
    /// The staging folder, held open beneath the data root: a staged file below it is opened
    /// through this descriptor, so no component of its path is resolved again.
    private let uploads: ConfinedDirectory?
    /// Acknowledgements and sends of every upload through this instance, committed in groups.
    private let commits: UploadCommitBatcher
    /// Peers this instance has found to exist: a run of many items for one peer checks it once
    /// (or once per worker that starts before the first check ends).
    private let confirmedPeers = Mutex(Set<Int64>())

    public init(
        client: CloudClient, postbox: Postbox, configuration: MultipartUploadConfiguration = MultipartUploadConfiguration(),
        uploads: ConfinedDirectory? = nil, observer: (@Sendable (MultipartUploadEvent) -> Void)? = nil
    ) {
        self.client = client
        self.postbox = postbox
        self.configuration = configuration
        self.uploads = uploads
        self.observer = observer
        self.commits = UploadCommitBatcher(postbox: postbox)
    }

    private struct Tally {
        var partsSent = 0
        var partsSkipped = 0
        var bytesSent: Int64 = 0
        var partsInFlight: AdaptiveConcurrency.Snapshot?
    }

    /// Counts shared by the part tasks of one call.
    private final class TallyBox: Sendable {
        private let state = Mutex(Tally())
        func update(_ body: (inout Tally) -> Void) { state.withLock { body(&$0) } }
        var value: Tally { state.withLock { $0 } }
    }

    /// Uploads item `itemId` (resuming from its acknowledged parts) and marks it sent with the
    /// message id. Returns at once for an item already sent. Throws `MultipartUploadError`
    /// (`isPermanent` tells whether another attempt can help) or `CancellationError`; the item's
    /// state is left for the caller to decide (queued for retry, or failed), except `.sent`.
    public func upload(itemId: Int64) async throws -> MultipartUploadResult {
        guard let first = try await postbox.read({ try $0.uploadQueue.get(itemId) }) else {
            throw MultipartUploadError.itemNotFound(itemId)
        }
        if first.state == .sent, let mid = first.messageId {
            return MultipartUploadResult(
                itemId: itemId, messageId: mid, documentId: first.documentId ?? 0,
                fileId: first.fileId, partsSent: 0, partsSkipped: 0, bytesSent: 0, restarts: 0, alreadySent: true)
        }
        let view = UploadItemView(
            id: itemId, path: first.stagedPath, size: first.stagedByteCount, sha256: first.stagedSHA256,
            mtimeNs: first.stagedMtimeNs, inode: first.stagedInode, ctimeNs: first.stagedChangeTimeNs)
        if view.size == 0 { throw MultipartUploadError.emptyFile(path: view.path) }
        let (file, refreshedMtime) = try await UploadIO.run { [uploads] in try StagedFile.open(view, below: uploads) }
        let mtime = refreshedMtime ?? view.mtimeNs
        if configuration.checkPeer, first.fileId == 0 { try await checkPeer(first.peerId.rawValue, item: itemId) }

        let renewal = startLeaseRenewal(itemId)
        defer { renewal?.cancel() }
        let tally = TallyBox()
        var restarts = 0
        while true {
            let (item, plan, key, acked) = try await prepare(itemId, refreshedMtime: refreshedMtime)
            let ackedSet = Set(acked.map(Int.init).filter { $0 < plan.totalParts })
            var committed = 0
            while ackedSet.contains(committed) { committed += 1 }
            observer?(
                .started(
                    item: itemId, fileId: item.fileId, totalParts: plan.totalParts, partSize: plan.partSize,
                    alreadyAcknowledged: ackedSet.count, committedOffset: min(plan.size, plan.offset(of: committed)),
                    big: plan.isBig, secret: key != nil))
            // A one-part small file goes with its `sendMedia` in one container, one request (see
            // `MultipartUploadConfiguration.pipelinesSendMedia`); should its part fail, the parts
            // and the send follow the ordinary way.
            var contained: ContainedSendOutcome?
            if configuration.pipelinesSendMedia, key == nil, !plan.isBig, plan.totalParts == 1, ackedSet.isEmpty {
                contained = try await sendContained(item: item, plan: plan, file: file, tally: tally)
            }
            let partStored = contained.map { $0.partError == nil } ?? false
            // Pipelined send: `sendMedia` leaves with the last part.
            var early: Task<CloudProtocol.Message, any Error>?
            defer { early?.cancel() }
            let pipelines =
                contained == nil && configuration.pipelinesSendMedia && key == nil && !plan.isBig && ackedSet.count < plan.totalParts
            let plaintextSHA =
                partStored
                ? nil
                : try await sendParts(item: item, plan: plan, key: key, file: file, acked: ackedSet, tally: tally) {
                    guard pipelines else { return }
                    early = Task {
                        // As the ordinary send follows acknowledgements that checked the lease, the
                        // pipelined one goes out only while this uploader still holds it.
                        try await self.checkLease(itemId)
                        return try await self.send(item: item, plan: plan, key: nil, partsWaitMs: SendMediaRequest.maxPartsWaitMs)
                    }
                }
            try Task.checkCancellation()
            if let plaintextSHA, plaintextSHA != item.sha256 {
                throw MultipartUploadError.fileChanged(item: itemId, reason: "content differs from enqueue (SHA-256 mismatch)")
            }
            if !file.unchanged(view, mtimeNs: mtime) { try await verifyContent(view, file) }

            let reason: String
            do {
                let message: CloudProtocol.Message
                if let sent = try containedAnswer(contained) {
                    message = sent
                } else if let pipelined = try await pipelinedAnswer(early) {
                    message = pipelined
                } else {
                    message = try await send(item: item, plan: plan, key: key)
                }
                let t = tally.value
                let result = try await finish(
                    itemId, message: message, fileId: item.fileId, tally: t, restarts: restarts, checksLease: partStored)
                observer?(.sent(item: itemId, messageId: message.id, partsSent: t.partsSent, bytesSent: t.bytesSent))
                return result
            } catch let error as CloudClientError {
                switch error.errorName {
                case .filePartMissing(let n)?:
                    reason = "the server no longer has part \(n) (FILE_PART_\(n)_MISSING)"
                case .filePartsInvalid?:
                    reason = "the server refused the parts (FILE_PARTS_INVALID)"
                case .checksumInvalid?:
                    try await verifyContent(view, file)
                    reason = "the assembled file did not match its SHA-256 (CHECKSUM_INVALID)"
                case .peerIdInvalid?:
                    throw MultipartUploadError.peerNotFound(peerId: item.peerId.rawValue, reason: "the server answered PEER_ID_INVALID")
                default:
                    throw Self.mapped(error, item: itemId)
                }
            }
            restarts += 1
            guard restarts <= configuration.maxRestarts else {
                throw MultipartUploadError.transient(item: itemId, reason: "\(reason), after \(restarts - 1) restarts")
            }
            let newId = try await restart(itemId)
            observer?(.restarted(item: itemId, oldFileId: item.fileId, newFileId: newId, reason: reason))
        }
    }

    // MARK: Steps

    /// Assigns (once) the file id, part layout, random id and secret key, and moves the item to
    /// `uploading`, in a write transaction that also checks the lease and reads the parts
    /// acknowledged so far. The transaction is shared with the other uploads' writes that arrive
    /// meanwhile (`UploadCommitBatcher`): the checks and reads fail this item alone, and it
    /// returns once the transaction has committed.
    private func prepare(_ itemId: Int64, refreshedMtime: Int64?) async throws -> (UploadItem, UploadPlan, SecretUploadKey?, [Int32]) {
        let lease = configuration.lease
        let prepared = try await commits.commit(
            check: { tx in try Self.prepared(itemId, in: tx.uploadQueue, lease: lease, refreshedMtime: refreshedMtime) },
            apply: { tx, prepared in
                let queue = try tx.uploadQueue
                if prepared.resetsParts { try queue.resetParts(item: itemId) }
                try queue.set(prepared.item)
            })
        return (prepared.item, prepared.plan, prepared.key, prepared.acknowledged)
    }

    /// What `prepare` writes and returns, read and decided from the item's row as it stands.
    private struct PreparedItem: Sendable {
        var item: UploadItem
        var plan: UploadPlan
        var key: SecretUploadKey?
        /// The parts acknowledged so far (none when `resetsParts`).
        var acknowledged: [Int32]
        /// The rows of parts sent under an earlier file id or layout are to be dropped.
        var resetsParts: Bool
    }

    private static func prepared(_ itemId: Int64, in queue: UploadQueueTable, lease: UploadLease?, refreshedMtime: Int64?) throws -> PreparedItem {
        guard var item = try queue.get(itemId) else { throw MultipartUploadError.itemNotFound(itemId) }
        if let lease, item.leaseHolder != lease.holder { throw MultipartUploadError.leaseLost(item: itemId, holder: item.leaseHolder) }
        if let refreshedMtime { item.stagedMtimeNs = refreshedMtime }
        var resetsParts = false
        var key: SecretUploadKey?
        if item.isSecret {
            key = try SecretUploadKey.load(item)
            if key == nil || key?.decryptedSize != item.size {
                let fresh = SecretUploadKey.random(plaintextSize: item.size)
                fresh.store(into: &item)
                key = fresh
                if item.fileId != 0 { resetsParts = true; item.fileId = 0 }
            } else if item.legacySecretKey != nil {
                key?.store(into: &item)  // an earlier build's row: its hex key becomes the typed field
            }
        }
        let sendSize = key?.containerSize ?? item.size
        guard let plan = UploadPlan(size: sendSize) else {
            if sendSize == 0 { throw MultipartUploadError.emptyFile(path: item.stagedPath) }
            throw MultipartUploadError.fileTooLarge(path: item.stagedPath, size: item.size)
        }
        if item.fileId == 0 || Int(item.partSize) != plan.partSize || Int(item.totalParts) != plan.totalParts {
            if item.fileId != 0 { resetsParts = true }
            item.fileId = SecureRandom.int64()
            item.partSize = Int32(plan.partSize)
            item.totalParts = Int32(plan.totalParts)
        }
        if item.randomId == 0 { item.randomId = SecureRandom.int64() }
        if item.state != .uploading { item.state = .uploading }
        let acknowledged = resetsParts ? [] : try queue.acknowledgedParts(item: itemId)
        return PreparedItem(item: item, plan: plan, key: key, acknowledged: acknowledged, resetsParts: resetsParts)
    }

    /// Sends every part not yet acknowledged, as many at once as the measured throughput calls
    /// for up to `partsInFlight` (`AdaptiveConcurrency`), recording each
    /// acknowledgement durably. For a secret item returns the SHA-256 of the plaintext read.
    /// `lastPartStarted` is called once the last pending part has been handed to the transport.
    private func sendParts(
        item: UploadItem, plan: UploadPlan, key: SecretUploadKey?, file: StagedFile,
        acked: Set<Int>, tally: TallyBox, lastPartStarted: () -> Void = {}
    ) async throws -> String? {
        let pending = (0..<plan.totalParts).filter { !acked.contains($0) }
        tally.update { $0.partsSkipped += acked.count }
        // Parts in flight follow the measured throughput, up to the configured limit (30 for a
        // big file, as Telegram's datacenters allow): a near server needs few, a far one all.
        let ceiling = plan.partsInFlight(bigLimit: configuration.partsInFlight, smallLimit: configuration.smallFilePartsInFlight)
        let window = AdaptiveConcurrency(initial: min(ceiling, 8), ceiling: ceiling)
        // An item staged as its container is sent as it is: it was encrypted at enqueue.
        let encryptor = item.isStagedAsContainer ? nil : key.map { SecretPartEncryptor(fd: file.fd, key: $0, plan: plan) }
        let itemId = item.id, fileId = item.fileId
        // A part's slot in the window is free once the server has answered: its acknowledgement
        // is committed by a task of its own meanwhile, so the next part does not wait for the
        // commit (which may be a hop to the store's queue and back). Every acknowledgement is
        // still committed before this returns, and only after its part's answer.
        try await withThrowingTaskGroup(of: PartStep.self) { group in
            var inFlight = 0
            func settled(_ step: PartStep, windowFull: Bool) {
                guard case .answered(let part, let length) = step else { return }
                window.completed(bytes: Int64(length), windowFull: windowFull)
                inFlight -= 1
                group.addTask {
                    try await self.acknowledge(itemId, part: part)
                    tally.update {
                        $0.partsSent += 1
                        $0.bytesSent += Int64(length)
                    }
                    self.observer?(.partSent(item: itemId, part: part, bytes: length))
                    return .acknowledged
                }
            }
            for part in pending {
                while inFlight >= window.limit, let step = try await group.next() { settled(step, windowFull: true) }
                try Task.checkCancellation()
                let body: RequestBody
                if let encryptor {
                    // IGE chains: encrypt (and hash) every part up to this one, in order.
                    let data = try await UploadIO.run { () throws -> Data in
                        var out = Data()
                        while encryptor.nextPart <= part { out = try encryptor.next().data }
                        return out
                    }
                    body = .data(data)
                } else {
                    body = .fileRegion(fd: file.fd, offset: plan.offset(of: part), length: Int64(plan.length(of: part)))
                }
                let length = plan.length(of: part)
                group.addTask {
                    try await self.sendPart(fileId: fileId, part: part, plan: plan, body: body, item: itemId)
                    withExtendedLifetime(file) {}
                    return .answered(part: part, bytes: length)
                }
                inFlight += 1
                if part == pending.last { lastPartStarted() }
            }
            while let step = try await group.next() { settled(step, windowFull: false) }
        }
        if !pending.isEmpty { tally.update { $0.partsInFlight = window.snapshot } }
        guard let encryptor else { return nil }
        // Parts after the last pending one were acknowledged earlier: read them for the hash.
        return try await UploadIO.run {
            while encryptor.nextPart < plan.totalParts { _ = try encryptor.next() }
            return encryptor.plaintextSHA256()
        }
    }

    /// What a task of `sendParts` finished: a part the server answered, or its acknowledgement.
    private enum PartStep: Sendable {
        case answered(part: Int, bytes: Int)
        case acknowledged
    }

    private func sendPart(fileId: Int64, part: Int, plan: UploadPlan, body: RequestBody, item: Int64) async throws {
        try await configuration.pacer?.wait()
        do {
            if plan.isBig {
                try await client.saveBigFilePart(fileId: fileId, part: part, totalParts: plan.totalParts, body: body)
            } else {
                try await client.saveFilePart(fileId: fileId, part: part, body: body)
            }
        } catch let error as CloudClientError {
            throw Self.mapped(error, item: item)
        }
    }

    /// Records part `part` as acknowledged; checks (and extends) the lease in the same
    /// transaction, which other acknowledgements and sends may share (`UploadCommitBatcher`).
    private func acknowledge(_ itemId: Int64, part: Int) async throws {
        let lease = configuration.lease
        try await commits.commit(
            check: { tx in
                guard let lease else { return }
                guard let item = try tx.uploadQueue.get(itemId) else { throw MultipartUploadError.itemNotFound(itemId) }
                guard item.leaseHolder == lease.holder else { throw MultipartUploadError.leaseLost(item: itemId, holder: item.leaseHolder) }
            },
            apply: { tx in
                let queue = try tx.uploadQueue
                if let lease, var item = try queue.get(itemId) {
                    let now = Self.nowMs()
                    if item.leaseUntil - now < lease.durationMs / 2 {
                        item.leaseUntil = now + lease.durationMs
                        try queue.set(item)
                    }
                }
                try queue.acknowledge(item: itemId, part: Int32(part))
            })
    }

    /// Throws `leaseLost` when another uploader holds the item's lease now.
    private func checkLease(_ itemId: Int64) async throws {
        guard let lease = configuration.lease else { return }
        let holder = try await postbox.read { try $0.uploadQueue.get(itemId)?.leaseHolder }
        guard let holder else { throw MultipartUploadError.itemNotFound(itemId) }
        guard holder == lease.holder else { throw MultipartUploadError.leaseLost(item: itemId, holder: holder) }
    }

    /// The answer of a pipelined `sendMedia`; nil when there was none, or when it found a part
    /// missing (a part that failed and was sent again arrived after it): the caller then sends
    /// it again the ordinary way, now that every part is acknowledged.
    private func pipelinedAnswer(_ early: Task<CloudProtocol.Message, any Error>?) async throws -> CloudProtocol.Message? {
        guard let early else { return nil }
        do {
            return try await early.value
        } catch let error as CloudClientError {
            if case .filePartMissing? = error.errorName { return nil }
            throw error
        }
    }

    /// The message a container brought; nil when there was no container, or when its
    /// `sendMedia` found the part missing (the part failed: it has been sent again since, and
    /// the send follows the ordinary way). Any other failure of the send is thrown.
    private func containedAnswer(_ contained: ContainedSendOutcome?) throws -> CloudProtocol.Message? {
        guard let contained else { return nil }
        switch contained.message {
        case .success(let message):
            return message
        case .failure(let error):
            if case .filePartMissing? = error.errorName { return nil }
            throw error
        }
    }

    /// Sends a one-part small file and its `sendMedia` in one container
    /// (`CloudClient.saveFileAndSendMedia`), once the lease is checked as before a pipelined
    /// send, and records the part's acknowledgement when the server stored it.
    private func sendContained(item: UploadItem, plan: UploadPlan, file: StagedFile, tally: TallyBox) async throws -> ContainedSendOutcome {
        try await checkLease(item.id)
        let length = plan.length(of: 0)
        let bytes = try await UploadIO.run { () throws -> Data in
            var data = Data(count: length)
            let read = try data.withUnsafeMutableBytes { try UploadIO.readFully(fd: file.fd, into: $0, offset: 0) }
            return data.prefix(read)
        }
        guard bytes.count == length else {
            throw MultipartUploadError.fileChanged(item: item.id, reason: "the file is shorter than when it was staged")
        }
        // Two calls, as the request rate counts them.
        try await configuration.pacer?.wait()
        try await configuration.pacer?.wait()
        let outcome: ContainedSendOutcome
        do {
            outcome = try await client.saveFileAndSendMedia(
                fileId: item.fileId, part: bytes, send: sendMediaRequest(item: item, plan: plan, key: nil, partsWaitMs: nil))
        } catch let error as CloudClientError {
            throw Self.mapped(error, item: item.id)
        }
        if outcome.partError == nil {
            // With the message sent too, `finish` follows at once and drops the part rows: the
            // part's acknowledgement would be written only to be removed, so `finish` checks the
            // lease the acknowledgement would have checked instead. A crash before `finish`
            // sends the container again, and the send's random id returns the same message.
            if case .failure = outcome.message { try await acknowledge(item.id, part: 0) }
            tally.update {
                $0.partsSent += 1
                $0.bytesSent += Int64(length)
            }
            observer?(.partSent(item: item.id, part: 0, bytes: length))
        }
        return outcome
    }

    private func send(item: UploadItem, plan: UploadPlan, key: SecretUploadKey?, partsWaitMs: Int? = nil) async throws -> CloudProtocol.Message {
        let request = sendMediaRequest(item: item, plan: plan, key: key, partsWaitMs: partsWaitMs)
        try await configuration.pacer?.wait()
        return try await client.sendMedia(request)
    }

    private func sendMediaRequest(item: UploadItem, plan: UploadPlan, key: SecretUploadKey?, partsWaitMs: Int?) -> SendMediaRequest {
        let name = item.originalName.isEmpty ? "file" : item.originalName
        let input = InputFile(
            id: item.fileId, parts: plan.totalParts, name: name, big: plan.isBig,
            sha256: key == nil ? item.sha256 : nil)
        return SendMediaRequest(
            peerId: item.peerId.rawValue, randomId: item.randomId, file: input,
            mimeType: item.mimeType ?? (key == nil ? nil : "application/octet-stream"),
            caption: item.caption.isEmpty ? nil : item.caption, partsWaitMs: partsWaitMs)
    }

    /// Marks the item sent with its message id, drops its part rows and the lease. `checksLease`:
    /// the lease is checked here, as a part's acknowledgement checks it (a container's part,
    /// whose acknowledgement is not written).
    private func finish(
        _ itemId: Int64, message: CloudProtocol.Message, fileId: Int64, tally: Tally, restarts: Int, checksLease: Bool = false
    ) async throws -> MultipartUploadResult {
        let documentId = message.media.first?.document?.id ?? 0
        let lease = checksLease ? configuration.lease : nil
        try await commits.commit(
            check: { tx in
                guard let item = try tx.uploadQueue.get(itemId) else { throw MultipartUploadError.itemNotFound(itemId) }
                if let lease, item.leaseHolder != lease.holder { throw MultipartUploadError.leaseLost(item: itemId, holder: item.leaseHolder) }
            },
            apply: { tx in
                let queue = try tx.uploadQueue
                guard var item = try queue.get(itemId) else { throw MultipartUploadError.itemNotFound(itemId) }
                item.state = .sent
                item.messageId = message.id
                item.failureReason = nil
                item.leaseHolder = ""
                item.leaseUntil = 0
                item.notBefore = 0
                item.documentId = documentId
                item.interruptions = 0  // settled: no crash loop
                try queue.set(item)
                try queue.resetParts(item: itemId)
            })
        var result = MultipartUploadResult(
            itemId: itemId, messageId: message.id, documentId: documentId, fileId: fileId,
            partsSent: tally.partsSent, partsSkipped: tally.partsSkipped, bytesSent: tally.bytesSent,
            restarts: restarts, alreadySent: false)
        result.partsInFlight = tally.partsInFlight
        return result
    }

    /// Forgets the acknowledged parts and picks a new file id (the server lost the old one).
    private func restart(_ itemId: Int64) async throws -> Int64 {
        let lease = configuration.lease
        return try await postbox.transaction { tx in
            let queue = try tx.uploadQueue
            guard var item = try queue.get(itemId) else { throw MultipartUploadError.itemNotFound(itemId) }
            if let lease, item.leaseHolder != lease.holder { throw MultipartUploadError.leaseLost(item: itemId, holder: item.leaseHolder) }
            try queue.resetParts(item: itemId)
            item.fileId = SecureRandom.int64()
            try queue.set(item)
            return item.fileId
        }
    }

    /// Re-hashes the staged file: a mismatch is a change while queued (permanent).
    private func verifyContent(_ view: UploadItemView, _ file: StagedFile) async throws {
        let (size, sha) = try await UploadIO.run { () throws -> (Int64, String) in
            let st = try UploadIO.stat(fd: file.fd)
            return (st.size, try UploadIO.sha256(fd: file.fd, length: st.size))
        }
        guard size == view.size else {
            throw MultipartUploadError.fileChanged(item: view.id, reason: "size was \(view.size) bytes at enqueue, now \(size)")
        }
        guard sha == view.sha256 else {
            throw MultipartUploadError.fileChanged(item: view.id, reason: "content differs from enqueue (SHA-256 mismatch)")
        }
    }

    /// The peer must exist: known to Postbox, or the server does not answer `PEER_ID_INVALID`.
    /// Once found, it is not checked again by this instance (a peer removed since then makes the
    /// send fail with `PEER_ID_INVALID`, which ends that item for good all the same).
    private func checkPeer(_ peerId: Int64, item: Int64) async throws {
        if confirmedPeers.withLock({ $0.contains(peerId) }) { return }
        let known = try await postbox.read { try $0.peers.get(PeerId(peerId)) != nil }
        if !known {
            do {
                try await configuration.pacer?.wait()
                _ = try await client.getHistory(peerId: peerId, limit: 1)
            } catch let error as CloudClientError {
                if error.errorName == .peerIdInvalid {
                    throw MultipartUploadError.peerNotFound(peerId: peerId, reason: "the server answered PEER_ID_INVALID")
                }
                throw Self.mapped(error, item: item)
            }
        }
        confirmedPeers.withLock { _ = $0.insert(peerId) }
    }

    /// Extends the lease every third of its duration while the upload runs (a long final send
    /// acknowledges no part). Losing it is noticed by the next acknowledgement.
    private func startLeaseRenewal(_ itemId: Int64) -> Task<Void, Never>? {
        guard let lease = configuration.lease else { return nil }
        let postbox = self.postbox
        return Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(max(1000, lease.durationMs / 3)))
                if Task.isCancelled { return }
                _ = try? await postbox.transaction { tx in
                    let queue = try tx.uploadQueue
                    guard var item = try queue.get(itemId), item.leaseHolder == lease.holder, item.state == .uploading else { return }
                    item.leaseUntil = Self.nowMs() + lease.durationMs
                    try queue.set(item)
                }
            }
        }
    }

    /// A client failure as an upload failure: permanent for requests the protocol forbids,
    /// otherwise transient (the next attempt resumes).
    static func mapped(_ error: CloudClientError, item: Int64) -> MultipartUploadError {
        if error.isCloudUnavailable { return .cloudUnavailable(item: item, reason: error.description) }
        switch error {
        case .config, .invalidRequest:
            return .rejected(item: item, reason: error.description)
        case .server(let e, _, _) where e.code >= 400 && e.code < 500 && e.code != 420:
            switch e.name {
            case .filePartSizeInvalid, .fileIdInvalid, .badRequest, .methodInvalid: return .rejected(item: item, reason: error.description)
            default: return .transient(item: item, reason: error.description)
            }
        default:
            return .transient(item: item, reason: error.description)
        }
    }

    /// The current time in Unix milliseconds (the queue's clock).
    public static func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
