import CloudCrypto
import CloudProtocol
import Foundation
import MediaBox

/// Everything a download shares with the fetcher that started it.
struct FetchContext: Sendable {
    let transport: any Transport
    let configuration: MultipartFetchConfiguration
    let limiter: PartLimiter
    /// When parts may be larger than a file's preferred size (shared by every download).
    let sizing: PartSizing
    let revalidator: (any ReferenceRevalidator)?
    /// When set, the CDN hash and reupload calls go through the JSON API client.
    let client: CloudClient?
}

/// One resource being fetched: plans the parts for the missing ranges, keeps up to
/// `maxPartsPerFile` of them in flight or waiting to be consumed (bounded memory), routes them
/// (DC, migration, CDN, reupload, revalidation) and hands verified events out in `next()`.
///
/// Pull-driven: a new part starts only when the consumer (MediaBox writing the partial file)
/// has taken one, so a slow disk never lets memory grow.
actor FileDownload {
    private let resourceId: MediaResourceId
    private let source: ResourceFetchSource
    private let context: FetchContext
    private let requests: PartRequests
    private let declaredSize: Int64?
    private var missing: [Range<Int64>]
    /// Where parts from the master DC are written as they arrive (plain cloud files only: CDN
    /// and secret parts are decrypted in memory first).
    private let writer: MediaResourcePartWriter?
    /// MediaBox's live wanted ranges: parts are taken from them by priority, one at a time as
    /// the window frees (nil: the planned `missing` ranges, in offset order).
    private let demand: MediaResourceFetchRanges?
    /// The file size once known (declared, or from the first answer).
    private var fileSize: Int64?

    // Streamable header (`0..<headerSize`; 0: none).
    private let headerSize: Int64
    /// The revision of the header the partial file holds, or that this download delivered.
    private var headerRevision: Int64?
    /// A part at offset 0 is in flight: it brings the header and its revision.
    private var headerInFlight = false

    // Parts.
    private var planned = false
    private var probeStarted = false
    private var pending: [PartSpec] = []
    private var pendingIndex = 0
    private var tasks: [Int: Task<Void, Never>] = [:]
    private var nextTaskId = 0
    /// Verified events not yet taken by the consumer (at most `maxPartsPerFile` data parts). A
    /// taken event leaves the array at once: a part buffer stays alive only while it is counted
    /// in the window, however far behind the consumer (a slow disk) falls.
    private var ready: [MediaResourceFetchEvent] = []
    private var failure: (any Error)?
    private var waiter: CheckedContinuation<Void, Never>?
    private var sizeAnnounced = false

    // Routing.
    private var dc: Int
    private var reference: FileReference
    private var revalidations = 0
    private var refreshTask: Task<FileReference, any Error>?
    private var cdn: CdnSession?
    private var cdnHashes = CdnHashes()
    private var reuploadGeneration = 0
    private var reuploadTask: Task<Void, any Error>?

    // Secret files.
    private var decryptor: SecretDecryptor?
    private var secretBuffer: [Int64: Data] = [:]

    /// `knownSize`: the size MediaBox already recorded for the partial file (from an earlier run),
    /// used when the resource itself does not declare one.
    /// `writer`: MediaBox's direct way into the partial file; parts then arrive as `.dataWritten`.
    /// `ranges`: MediaBox's live wanted ranges (ignored for secret files, decrypted in order).
    /// `headerRevision`: the revision of the header the partial file holds (see `noteHeaderRevision`).
    init(
        resource: any CloudFetchableResource, missing: [Range<Int64>], knownSize: Int64? = nil, writer: MediaResourcePartWriter? = nil,
        ranges: MediaResourceFetchRanges? = nil, headerRevision: Int64? = nil, context: FetchContext
    ) throws {
        self.resourceId = resource.id
        if case .cloud = resource.fetchSource { self.headerSize = resource.headerSize } else { self.headerSize = 0 }
        self.headerRevision = headerRevision
        self.source = resource.fetchSource
        self.context = context
        self.requests = PartRequests(transport: context.transport, configuration: context.configuration, resourceId: resource.id)
        self.missing = missing
        if case .cloud = resource.fetchSource { self.writer = writer } else { self.writer = nil }
        if case .secret = resource.fetchSource { self.demand = nil } else { self.demand = ranges }
        switch source {
        case let .cloud(location, fileReference, _):
            dc = location.dcId
            reference = fileReference
            declaredSize = resource.size ?? knownSize
        case let .secret(location, key, fingerprint, containerSize, decryptedSize):
            guard key.fingerprint == fingerprint else { throw MultipartFetchError.keyFingerprintMismatch(resourceId: resource.id) }
            dc = location.dcId
            reference = .none
            declaredSize = containerSize
            decryptor = SecretDecryptor(key: key, decryptedSize: decryptedSize)
            // IGE chains every block to the one before: decrypt (so fetch) from the start.
            self.missing = [0..<containerSize]
        case .plainURL:
            dc = 0
            reference = .none
            declaredSize = resource.size ?? knownSize
        }
        fileSize = declaredSize
        if let size = declaredSize {
            planned = true
            if demand != nil { return }
            pending = PartPlan.parts(
                missing: self.missing, size: size,
                partSize: Self.partSize(source: source, configuration: context.configuration, size: size))
        }
    }

    /// Wakes the consumer side when MediaBox adds wanted ranges.
    private func demandChanged() { wake() }

    /// Listens to the wanted ranges (once the download exists, so `next()` can be woken).
    nonisolated func listen() {
        demand?.setListener { [weak self] in
            guard let self else { return }
            Task { await self.demandChanged() }
        }
    }

    private static func partSize(source: ResourceFetchSource, configuration: MultipartFetchConfiguration, size: Int64?) -> Int64 {
        if case .plainURL = source { return configuration.plainPartSize }
        return PartPlan.cloudPartSize(fileSize: size)
    }

    private nonisolated var isPlain: Bool { if case .plainURL = source { return true } else { return false } }

    private nonisolated func partSize(for size: Int64?) -> Int64 {
        Self.partSize(source: source, configuration: context.configuration, size: size)
    }

    // MARK: consumer side

    /// The next event (size, then data parts in any order), nil when everything missing was
    /// delivered; throws the first failure (and stops the other parts).
    func next() async throws -> MediaResourceFetchEvent? {
        while true {
            if let failure {
                cancelAll()
                throw failure
            }
            if !ready.isEmpty {
                // A few entries at most: removing the first costs less than any bookkeeping.
                let event = ready.removeFirst()
                fill()
                return event
            }
            fill()
            if !ready.isEmpty { continue }
            if planned, tasks.isEmpty, pendingIndex >= pending.count, failure == nil { return nil }
            await withCheckedContinuation { waiter = $0 }
        }
    }

    /// Stops every part (the consumer went away or was cancelled).
    func cancel() {
        if failure == nil { failure = CancellationError() }
        cancelAll()
        wake()
    }

    private func cancelAll() {
        for t in tasks.values { t.cancel() }
        tasks.removeAll()
        refreshTask?.cancel()
        reuploadTask?.cancel()
    }

    private func wake() {
        let w = waiter
        waiter = nil
        w?.resume()
    }

    private var windowUsed: Int { tasks.count + ready.count + secretBuffer.count }

    private func fill() {
        guard failure == nil else { return }
        if !planned {
            if !probeStarted {
                probeStarted = true
                let size = partSize(for: nil)
                if let demand {
                    guard let part = demand.nextPrioritizedPart(partSize: size) else {
                        planned = true  // nothing wanted: the stream ends
                        return
                    }
                    start(PartSpec(offset: part.range.lowerBound, limit: size, urgent: part.priority == .maximum))
                    return
                }
                let first = missing.first?.lowerBound ?? 0
                start(PartSpec(offset: (first / size) * size, limit: size))
            }
            return
        }
        let limit = max(1, context.configuration.maxPartsPerFile)
        if let demand {
            let size = partSize(for: fileSize)
            let large = context.sizing.largePartSize(over: size)
            while windowUsed < limit, let part = demand.nextPrioritizedPart(partSize: size, largePartSize: large, fileSize: fileSize) {
                let partLimit = part.range.count > size ? (large ?? size) : size
                start(PartSpec(offset: part.range.lowerBound, limit: partLimit, urgent: part.priority == .maximum))
            }
            return
        }
        while pendingIndex < pending.count, windowUsed < limit {
            start(pending[pendingIndex])
            pendingIndex += 1
        }
    }

    private func start(_ part: PartSpec) {
        if part.offset == 0, headerSize > 0 { headerInFlight = true }
        let id = nextTaskId
        nextTaskId += 1
        tasks[id] = Task { [self] in
            let result: Result<PartData, any Error>
            do { result = .success(try await self.runPart(part)) } catch { result = .failure(error) }
            self.finished(id, part, result)
        }
    }

    private func finished(_ id: Int, _ part: PartSpec, _ result: Result<PartData, any Error>) {
        guard tasks.removeValue(forKey: id) != nil else { return }
        defer { wake() }
        switch result {
        case .failure(let error):
            if failure == nil { failure = error }
            cancelAll()
        case .success(let p):
            accept(p, part)
            if failure == nil { noteHeaderRevision(p, part) }
        }
    }

    /// The header revision on a part answer. A part holding the header sends its revision after
    /// its bytes (a refetched header first replaces the old one); any other part that names a
    /// revision other than the header's fetches `0..<headerSize` again. The bytes after the
    /// header never change with a revision, so that part is kept.
    private func noteHeaderRevision(_ p: PartData, _ part: PartSpec) {
        guard headerSize > 0, let revision = p.headerRevision else { return }
        if part.offset == 0 {
            headerInFlight = false
            if part.replacesHeader {
                guard p.data.count >= Int(headerSize) else {
                    failure = MultipartFetchError.badAnswer(resourceId: resourceId, offset: 0, reason: "revised header shorter than its size")
                    return cancelAll()
                }
                ready.append(.replaceHeader(data: Data(p.data.prefix(Int(headerSize)))))
            }
            headerRevision = revision
            ready.append(.headerRevision(revision))
        } else if !headerInFlight, revision != headerRevision {
            start(PartSpec(offset: 0, limit: partSize(for: fileSize), replacesHeader: true))
        }
    }

    private func accept(_ p: PartData, _ part: PartSpec) {
        if let declared = declaredSize, p.fileSize != declared {
            failure = MultipartFetchError.sizeMismatch(resourceId: resourceId, expected: declared, served: p.fileSize)
            cancelAll()
            return
        }
        if declaredSize == nil, !sizeAnnounced {
            sizeAnnounced = true
            ready.append(.resourceSizeUpdated(p.fileSize))
        }
        if !planned {
            planned = true
            fileSize = p.fileSize
            // The probe's part was taken from the wanted ranges: the rest come from them too.
            guard demand == nil else { return deliver(p, part) }
            let rest = PartPlan.subtract(part.offset..<(part.offset + part.limit), from: missing)
            pending = PartPlan.parts(missing: rest, size: p.fileSize, partSize: partSize(for: p.fileSize))
        }
        deliver(p, part)
    }

    private func deliver(_ p: PartData, _ part: PartSpec) {
        if part.replacesHeader { return }  // sent as `replaceHeader` (noteHeaderRevision)
        if decryptor != nil {
            secretBuffer[part.offset] = p.data
            drainSecret()
        } else if p.written > 0 {
            ready.append(.dataWritten(offset: part.offset, length: Int(p.written)))
        } else if !p.data.isEmpty {
            ready.append(.dataPart(offset: part.offset, data: p.data))
        }
    }

    private func drainSecret() {
        guard var d = decryptor else { return }
        defer { decryptor = d }
        while let cipher = secretBuffer.removeValue(forKey: d.position) {
            let offset = d.position
            do {
                let plain = try d.decrypt(cipher)
                if !plain.isEmpty { ready.append(.dataPart(offset: offset, data: plain)) }
            } catch {
                failure = MultipartFetchError.badAnswer(
                    resourceId: resourceId, offset: offset, reason: "secret container part cannot be decrypted (length \(cipher.count))")
                cancelAll()
                return
            }
            if cipher.isEmpty { break }
        }
    }

    // MARK: routing state

    private enum Route: Sendable {
        case master(baseURL: String, location: FileLocation, reference: FileReference)
        case cdn(CdnSession, generation: Int)
        case plain(String)
    }

    private func route() throws -> Route {
        switch source {
        case .plainURL(let url):
            return .plain(url)
        case .cloud(let location, _, _), .secret(let location, _, _, _, _):
            if let cdn { return .cdn(cdn, generation: reuploadGeneration) }
            guard let base = context.configuration.baseURL(dc: dc) else {
                throw MultipartFetchError.unknownDatacenter(resourceId: resourceId, dc: dc)
            }
            return .master(baseURL: base, location: location, reference: reference)
        }
    }

    private func migrate(to newDc: Int) throws {
        guard context.configuration.baseURL(dc: newDc) != nil else {
            throw MultipartFetchError.unknownDatacenter(resourceId: resourceId, dc: newDc)
        }
        dc = newDc
    }

    private func switchToCdn(_ redirect: CdnRedirect) {
        if cdn == nil || cdn?.redirect.fileToken != redirect.fileToken {
            cdn = CdnSession(redirect)
            cdnHashes = CdnHashes()
        }
        cdnHashes.merge(redirect.fileHashes)
    }

    private func dropCdn() { cdn = nil }

    /// A fresh reference after `failed` was rejected: one revalidation per failed reference,
    /// shared by every part that saw it.
    private func refreshReference(failed: FileReference) async throws {
        if reference != failed { return }
        if let task = refreshTask {
            _ = try await task.value
            return
        }
        guard case .cloud(let location, _, let parent) = source, let revalidator = context.revalidator,
            revalidations < context.configuration.maxRevalidations
        else {
            let parent: MediaResourceReference
            if case .cloud(_, _, let p) = source { parent = p } else { parent = .standalone }
            throw MultipartFetchError.fileReferenceExpired(resourceId: resourceId, parent: parent)
        }
        revalidations += 1
        let id = resourceId
        let task = Task { try await revalidator.revalidate(resourceId: id, location: location, parent: parent) }
        refreshTask = task
        defer { refreshTask = nil }
        reference = try await task.value
    }

    /// Makes sure the master DC pushed the file to the CDN since `generation`.
    private func reupload(seen generation: Int) async throws {
        if reuploadGeneration != generation { return }
        if let task = reuploadTask {
            try await task.value
            return
        }
        guard let session = cdn else { return }
        guard let master = context.configuration.baseURL(dc: session.redirect.masterDcId) else {
            throw MultipartFetchError.unknownDatacenter(resourceId: resourceId, dc: session.redirect.masterDcId)
        }
        let requests = self.requests
        let client = context.client
        let id = resourceId
        let task = Task { [self] in
            let token = session.redirect.fileToken
            let hashes: [CdnFileHash]
            if let client {
                hashes = try await ClientErrors.mapped(id, offset: 0) {
                    try await client.reuploadCdnFile(fileToken: token, masterDc: session.redirect.masterDcId)
                }
            } else {
                hashes = try await requests.hashesCall(baseURL: master, method: .reuploadCdnFile, body: ReuploadCdnFileRequest(fileToken: token))
            }
            self.mergeHashes(hashes)
        }
        reuploadTask = task
        defer { reuploadTask = nil }
        try await task.value
        reuploadGeneration += 1
    }

    private func mergeHashes(_ hashes: [CdnFileHash]) { cdnHashes.merge(hashes) }

    /// The block hashes covering `range`, fetching missing windows from the master DC.
    private func hashes(for range: Range<Int64>, session: CdnSession) async throws -> [Int64: Data] {
        var rounds = 0
        while let missingOffset = cdnHashes.firstMissing(in: range) {
            rounds += 1
            guard rounds <= 4 else {
                throw MultipartFetchError.badAnswer(resourceId: resourceId, offset: missingOffset, reason: "master DC gives no hash for the block")
            }
            guard let master = context.configuration.baseURL(dc: session.redirect.masterDcId) else {
                throw MultipartFetchError.unknownDatacenter(resourceId: resourceId, dc: session.redirect.masterDcId)
            }
            let got: [CdnFileHash]
            if let client = context.client {
                got = try await ClientErrors.mapped(resourceId, offset: missingOffset) {
                    try await client.getCdnFileHashes(fileToken: session.redirect.fileToken, offset: missingOffset, masterDc: session.redirect.masterDcId)
                }
            } else {
                got = try await requests.hashesCall(
                    baseURL: master, method: .getCdnFileHashes,
                    body: GetCdnFileHashesRequest(fileToken: session.redirect.fileToken, offset: missingOffset))
            }
            cdnHashes.merge(got)
        }
        return cdnHashes.subset(range)
    }

    // MARK: one part

    /// Fetches one part through retries, flood waits, migration, CDN and revalidation.
    private nonisolated func runPart(_ part: PartSpec) async throws -> PartData {
        let configuration = context.configuration
        var failures = 0
        var floods = 0
        var migrations = 0
        var redirects = 0
        var reuploads = 0
        while true {
            try Task.checkCancellation()
            let route = try await self.route()
            let outcome: PartOutcome
            do {
                let limiter = context.limiter
                let sizing = context.sizing
                outcome = try await limiter.withSlot(urgent: part.urgent) {
                    let started = DispatchTime.now().uptimeNanoseconds
                    let answer: PartOutcome
                    switch route {
                    case let .master(base, location, reference):
                        answer = try await requests.getFile(
                            baseURL: base, location: location, reference: reference, part: part,
                            writer: part.replacesHeader ? nil : writer)
                    case let .cdn(session, generation):
                        answer = try await requests.getCdnFile(session: session, part: part, generation: generation) { range in
                            try await self.hashes(for: range, session: session)
                        }
                    case .plain(let url):
                        answer = try await requests.plainGet(url: url, part: part)
                    }
                    if case .data(let d) = answer {
                        let bytes = d.written + Int64(d.data.count)
                        sizing.record(bytes: bytes, seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
                        // Urgent parts run beside the limit: they tell nothing about it.
                        if !part.urgent { limiter.completed(bytes: bytes) }
                    }
                    return answer
                }
            } catch let e as TransportError {
                guard TransportErrorText.isRetryable(e) else {
                    throw MultipartFetchError.transport(resourceId: resourceId, reason: TransportErrorText.describe(e))
                }
                outcome = .retry(reason: TransportErrorText.describe(e), badAnswer: TransportErrorText.isBadAnswer(e))
            }
            switch outcome {
            case .data(let d):
                return d
            case let .retry(reason, bad):
                failures += 1
                if failures >= configuration.retry.maxAttempts {
                    if bad { throw MultipartFetchError.badAnswer(resourceId: resourceId, offset: part.offset, reason: reason) }
                    throw MultipartFetchError.unavailable(resourceId: resourceId, offset: part.offset, attempts: failures, reason: reason)
                }
                try await Task.sleep(for: .seconds(configuration.retry.delay(beforeRetry: failures)))
            case .floodWait(let seconds):
                floods += 1
                guard Double(seconds) <= configuration.retry.maxFloodWait, floods <= configuration.retry.maxFloodWaits else {
                    throw MultipartFetchError.server(resourceId: resourceId, name: .floodWait(seconds), status: 420)
                }
                try await Task.sleep(for: .seconds(max(0, seconds)))
            case .migrate(let newDc):
                migrations += 1
                guard migrations <= configuration.retry.maxMigrations else { throw MultipartFetchError.tooManyMigrations(resourceId: resourceId) }
                try await migrate(to: newDc)
            case .redirect(let redirect):
                redirects += 1
                guard redirects <= 4, !isPlain else {
                    throw MultipartFetchError.badAnswer(resourceId: resourceId, offset: part.offset, reason: "CDN redirect loop")
                }
                await switchToCdn(redirect)
            case .referenceExpired(let failed):
                try await refreshReference(failed: failed)
            case .reuploadNeeded(let generation):
                reuploads += 1
                guard reuploads <= 3 else {
                    throw MultipartFetchError.server(resourceId: resourceId, name: .fileReuploadNeeded, status: 400)
                }
                try await reupload(seen: generation)
            case .tokenInvalid:
                redirects += 1
                guard redirects <= 4 else {
                    throw MultipartFetchError.server(resourceId: resourceId, name: .fileTokenInvalid, status: 400)
                }
                await dropCdn()
            case .fatal(let e):
                throw e
            }
        }
    }
}
