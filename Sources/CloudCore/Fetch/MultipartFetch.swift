import CloudProtocol
import Foundation
import MediaBox

/// The cloud's `MediaResourceFetcher` (Telegram-iOS's `multipartFetch`): downloads a
/// `CloudFetchableResource` in parts and yields them to MediaBox, which writes them into the
/// partial file at their offsets.
///
/// - Parts: sized by file size (`FilePartRules`), several in flight per file
///   (`maxPartsPerFile`) and a shared limit over all files that follows the measured
///   throughput up to `maxConcurrentParts` (`AdaptiveConcurrency`).
/// - Resume: only the ranges MediaBox reports missing are requested.
/// - Routing: the location's DC, `FILE_MIGRATE_<n>`, CDN redirects (AES-256-CTR decryption,
///   SHA-256 per 128 KiB against the master DC's hashes, `FILE_REUPLOAD_NEEDED` → reupload).
/// - Secret files: AES-256-IGE decrypted in order, trimmed to the decrypted size.
/// - Failures: backoff with jitter for transport errors, 5xx, corrupt or malformed parts;
///   `FLOOD_WAIT` honoured; `FILE_REFERENCE_EXPIRED` → the optional `ReferenceRevalidator`, or
///   `MultipartFetchError.fileReferenceExpired` carrying the resource id and parent.
/// - Memory: pull-driven, at most `maxPartsPerFile` parts (≤ 1 MiB each) per file held at once.
///
/// ```swift
/// let transport = try CurlTransport()
/// let fetch = MultipartFetch(transport: transport,
///                            configuration: MultipartFetchConfiguration(datacenters: [1: dc1, 2: dc2]),
///                            revalidator: nil)
/// let mediaBox = try MediaBox(basePath: dir, fetcher: fetch)
/// let data = try await mediaBox.fetch(CloudDocumentMediaResource(document: doc, reference: .message(id)),
///                                     info: MediaResourceStorageInfo(peerId: peer, contentType: .file))
/// ```
public final class MultipartFetch: MediaResourceFetcher {
    public let configuration: MultipartFetchConfiguration
    let context: FetchContext

    /// - Parameters:
    ///   - transport: shared by every download (one per process; connections are reused).
    ///   - revalidator: consulted on `FILE_REFERENCE_EXPIRED`; nil makes that error final.
    public init(transport: any Transport, configuration: MultipartFetchConfiguration, revalidator: (any ReferenceRevalidator)? = nil) {
        self.configuration = configuration
        self.context = FetchContext(
            transport: transport, configuration: configuration,
            limiter: PartLimiter(configuration.adaptivePartLimit()),
            sizing: PartSizing(targetSeconds: configuration.largePartSeconds), revalidator: revalidator, client: nil)
    }

    /// A fetcher on a `CloudClient`'s account: its DCs, auth token and transport (connections
    /// shared with the API calls); the CDN hash and reupload calls go through the client.
    /// `tune` adjusts the part settings (concurrency, attempts, …).
    public init(
        client: CloudClient, revalidator: (any ReferenceRevalidator)? = nil,
        tune: (inout MultipartFetchConfiguration) -> Void = { _ in }
    ) {
        var configuration = MultipartFetchConfiguration(datacenters: client.config.datacenters, authToken: client.config.authToken)
        configuration.requestTimeout = client.config.requestTimeout
        configuration.retry.maxFloodWait = client.config.retry.maxFloodWait
        tune(&configuration)
        self.configuration = configuration
        self.context = FetchContext(
            transport: client.transport, configuration: configuration,
            limiter: PartLimiter(configuration.adaptivePartLimit()),
            sizing: PartSizing(targetSeconds: configuration.largePartSeconds), revalidator: revalidator, client: client)
    }

    /// The shared part limit as it stands (how many parts in flight this fetcher settled on).
    public var concurrency: AdaptiveConcurrency.Snapshot { context.limiter.concurrency.snapshot }

    public func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> {
        guard let resource = request.resource as? any CloudFetchableResource else {
            let id = request.resource.id
            return AsyncThrowingStream { $0.finish(throwing: MultipartFetchError.unsupportedResource(id)) }
        }
        let download: FileDownload
        do {
            download = try FileDownload(
                resource: resource, missing: request.missingRanges, knownSize: request.knownSize, writer: request.partWriter,
                ranges: request.ranges, headerRevision: request.headerRevision, context: context)
        } catch {
            return AsyncThrowingStream { $0.finish(throwing: error) }
        }
        download.listen()
        let handle = DownloadHandle(download)
        return AsyncThrowingStream(unfolding: { try await handle.next() })
    }

    /// Fetches a whole resource into memory (for small files that are stored in batches, see
    /// `fetchBatch`): the bytes of `0..<size`, verified and decrypted.
    public func fetchData(_ resource: any CloudFetchableResource) async throws -> Data {
        let download = try FileDownload(resource: resource, missing: [0..<(resource.size ?? Int64.max)], context: context)
        let handle = DownloadHandle(download)
        var size = resource.size.map { Int($0) } ?? 0
        // Allocated on the first part that is not the whole file: a file that arrives as one
        // part (the usual small file) adopts that part's buffer without a copy.
        var data: Data?
        var written: Int64 = 0
        while let event = try await handle.next() {
            switch event {
            case .resourceSizeUpdated(let s):
                if size != Int(s) { size = Int(s); data = nil; written = 0 }
            case .replaceHeader(let header):
                // The header was revised during the download: its bytes were counted once already.
                guard header.count <= size else {
                    throw MultipartFetchError.badAnswer(resourceId: resource.id, offset: 0, reason: "header beyond the file's end")
                }
                if data == nil { data = Data(count: size) }
                data!.replaceSubrange(0..<header.count, with: header)
            case .headerRevision:
                break
            case let .dataPart(offset, part):
                guard offset >= 0, offset + Int64(part.count) <= Int64(size) else {
                    throw MultipartFetchError.badAnswer(resourceId: resource.id, offset: offset, reason: "part beyond the file's end")
                }
                if data == nil, offset == 0, part.count == size, part.startIndex == 0 {
                    data = part
                } else {
                    if data == nil { data = Data(count: size) }
                    data!.replaceSubrange(Int(offset)..<Int(offset) + part.count, with: part)
                }
                written += Int64(part.count)
            case .dataWritten(let offset, _):
                // Only a download given a part writer writes parts itself; this one has none.
                throw MultipartFetchError.badAnswer(resourceId: resource.id, offset: offset, reason: "part written outside memory")
            }
        }
        guard written >= Int64(size) else {
            throw MultipartFetchError.badAnswer(resourceId: resource.id, offset: written, reason: "download ended short")
        }
        return data ?? Data(count: size)
    }
}

/// Owns a download for its stream: cancels it when the consumer is cancelled or drops the stream.
final class DownloadHandle: Sendable {
    private let download: FileDownload

    init(_ download: FileDownload) { self.download = download }

    deinit {
        let d = download
        Task { await d.cancel() }
    }

    func next() async throws -> MediaResourceFetchEvent? {
        let d = download
        return try await withTaskCancellationHandler {
            try await d.next()
        } onCancel: {
            Task { await d.cancel() }
        }
    }
}
