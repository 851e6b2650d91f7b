import Foundation
import MediaBox
import Postbox
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// MediaBox's fetcher when the cluster has a shared media tier: the chain after the local cache
/// (which MediaBox itself checks first) — the bucket, then the cloud.
///
/// For a shareable resource (``SharedMediaTier/isShareable(_:)``) indexed in the tier, the whole
/// object is fetched by ranged GETs into a scratch file and checked against the size and
/// SHA-256 recorded at publish before any byte is handed to MediaBox; then only the missing
/// ranges are delivered. A missing or mismatching object drops the index entry and the resource
/// comes from the cloud; so does everything when the index or the bucket cannot be reached.
/// A resource completed from the cloud is published once MediaBox has completed and checked it
/// (``fetchCompleted(_:reader:)``); a publish failure is reported to `observer` and never fails
/// the fetch.
public final class SharedTierFetcher: MediaResourceFetcher {
    public let tier: SharedMediaTier
    public let cloud: any MediaResourceFetcher
    private let observer: @Sendable (SharedMediaTierEvent) -> Void
    /// Resources this fetcher handed to the cloud: published when MediaBox completes them.
    private let fromCloud = Mutex<Set<MediaResourceId>>([])

    public init(tier: SharedMediaTier, cloud: any MediaResourceFetcher, observer: @escaping @Sendable (SharedMediaTierEvent) -> Void = { _ in }) {
        self.tier = tier
        self.cloud = cloud
        self.observer = observer
    }

    public func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> {
        guard SharedMediaTier.isShareable(request.resource) else { return cloud.fetch(request) }
        let read = SharedTierRead(request: request, fetcher: self)
        return AsyncThrowingStream(unfolding: { try await read.next() })
    }

    public func fetchCompleted(_ resource: any MediaResource, reader: MediaResourceReader) async {
        await cloud.fetchCompleted(resource, reader: reader)
        let id = resource.id
        guard fromCloud.withLock({ $0.remove(id) }) != nil else { return }
        do {
            let entry = try await tier.publish(id, file: reader)
            observer(.published(id, bytes: entry.size))
        } catch {
            observer(.publishFailed(id, reason: "\(error)"))
        }
    }

    /// Opens the verified object of a resource, or nil when it must come from the cloud.
    fileprivate func openFromTier(_ id: MediaResourceId, knownSize: Int64?) async -> (fd: Int32, size: Int64)? {
        let entry: SharedMediaTierEntry?
        do { entry = try await tier.claim(id) } catch {
            observer(.unavailable(id, reason: "the tier's index: \(error)"))
            return nil
        }
        guard let entry else { return nil }
        if let knownSize, knownSize != entry.size {
            try? await tier.forget(entry)
            observer(.discarded(id, reason: "the index says \(entry.size) bytes, the resource has \(knownSize)"))
            return nil
        }
        do {
            let fd = try await tier.download(entry)
            observer(.readFromTier(id, bytes: entry.size))
            return (fd, entry.size)
        } catch let error as SharedMediaTierReadError {
            if case .mismatch = error { try? await tier.forget(entry) }
            observer(.discarded(id, reason: "\(error)"))
        } catch {
            observer(.unavailable(id, reason: "\(error)"))
        }
        return nil
    }

    fileprivate func fallBackToCloud(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> {
        let id = request.resource.id
        fromCloud.withLock { _ = $0.insert(id) }
        return cloud.fetch(request)
    }
}

/// One fetch through the chain, driven by its stream's unfolding (which calls `next()` one
/// call at a time, so the state needs no lock).
private final class SharedTierRead: @unchecked Sendable {
    private enum Phase {
        case start
        case tier(fd: Int32, ranges: [Range<Int64>])
        case cloud(AsyncThrowingStream<MediaResourceFetchEvent, any Error>.AsyncIterator)
        case done
    }

    /// Bytes per data part read from the verified object.
    static let chunk: Int64 = 1 << 20
    private let request: MediaResourceFetchRequest
    private let fetcher: SharedTierFetcher
    private var phase = Phase.start

    init(request: MediaResourceFetchRequest, fetcher: SharedTierFetcher) {
        self.request = request
        self.fetcher = fetcher
    }

    deinit {
        if case .tier(let fd, _) = phase { close(fd) }
    }

    func next() async throws -> MediaResourceFetchEvent? {
        switch phase {
        case .start:
            if let (fd, size) = await fetcher.openFromTier(request.resource.id, knownSize: request.knownSize ?? request.resource.size) {
                let ranges = request.missingRanges.compactMap { r -> Range<Int64>? in
                    let clipped = max(0, r.lowerBound)..<min(size, r.upperBound)
                    return clipped.isEmpty ? nil : clipped
                }
                phase = .tier(fd: fd, ranges: ranges)
                return .resourceSizeUpdated(size)
            }
            phase = .cloud(fetcher.fallBackToCloud(request).makeAsyncIterator())
            return try await next()
        case .tier(let fd, var ranges):
            guard let first = ranges.first else {
                close(fd)
                phase = .done
                return nil
            }
            let length = min(Self.chunk, first.upperBound - first.lowerBound)
            let offset = first.lowerBound
            let data = try await UploadIO.run { () throws -> Data in
                var data = Data(count: Int(length))
                let n = try data.withUnsafeMutableBytes { try UploadIO.readFully(fd: fd, into: $0, offset: offset) }
                return data.prefix(n)
            }
            guard Int64(data.count) == length else { throw SharedMediaTierReadError.local("the verified copy ended early") }
            ranges[0] = (offset + length)..<first.upperBound
            if ranges[0].isEmpty { ranges.removeFirst() }
            phase = .tier(fd: fd, ranges: ranges)
            return .dataPart(offset: offset, data: data)
        case .cloud(var iterator):
            let event = try await iterator.next()
            phase = event == nil ? .done : .cloud(iterator)
            return event
        case .done:
            return nil
        }
    }
}
