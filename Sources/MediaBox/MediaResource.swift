import Foundation
import Postbox

/// Something MediaBox can store: a stable id and, when known, its size. CloudCore's resource
/// types (cloud files, documents, photo sizes, secret files) conform and add their routing data.
public protocol MediaResource: Sendable {
    var id: MediaResourceId { get }
    /// Total size in bytes, or nil until the fetcher reports it.
    var size: Int64? { get }
    /// Bytes at the start that every fetch gets before anything else (a streamable video's
    /// header, its `moov` atom); 0 when there is none.
    var headerSize: Int64 { get }
}

extension MediaResource {
    public var headerSize: Int64 { 0 }
}

/// A plain resource: an id and an optional size (tests, local files, cached representations).
public struct SimpleMediaResource: MediaResource, Hashable {
    public let id: MediaResourceId
    public let size: Int64?
    public init(id: MediaResourceId, size: Int64?) {
        self.id = id
        self.size = size
    }
    public init(_ id: String, size: Int64?) { self.init(id: MediaResourceId(id), size: size) }
}

/// What a reader may use of a resource now: `size` bytes of `path` from `offset`; `complete`
/// when that is the whole resource (the complete file), otherwise the partial file's prefix.
public struct MediaResourceData: Sendable, Equatable {
    public let path: String
    public let offset: Int64
    public let size: Int64
    public let complete: Bool
    public init(path: String, offset: Int64, size: Int64, complete: Bool) {
        self.path = path
        self.offset = offset
        self.size = size
        self.complete = complete
    }
}

/// Who a resource belongs to, for StorageBox accounting and cleanup policy.
/// `PeerId(0)` stands for "no peer" (stickers sets, wallpapers, …).
public struct MediaResourceStorageInfo: Sendable, Equatable {
    public var peerId: PeerId
    public var peerClass: PeerStorageClass?
    public var messageId: MessageId?
    public var contentType: MediaContentType
    public var location: MediaStorageLocation

    public init(
        peerId: PeerId = PeerId(0), peerClass: PeerStorageClass? = nil, messageId: MessageId? = nil,
        contentType: MediaContentType = .other, location: MediaStorageLocation = .resources
    ) {
        self.peerId = peerId
        self.peerClass = peerClass
        self.messageId = messageId
        self.contentType = contentType
        self.location = location
    }
}

/// One event from a fetch: bytes at an offset, or the resource's size once known.
public enum MediaResourceFetchEvent: Sendable {
    case dataPart(offset: Int64, data: Data)
    /// `length` verified bytes at `offset` are already in the partial file, written through the
    /// request's `partWriter`: MediaBox records the range without writing anything.
    case dataWritten(offset: Int64, length: Int)
    case resourceSizeUpdated(Int64)
    /// A new version of the resource's first `data.count` bytes (a revised header): replaces
    /// that range of the partial file durably, whatever it held before.
    case replaceHeader(data: Data)
    /// The revision of the header (`0..<headerSize`) that the header bytes delivered in this
    /// stream belong to, as the fetcher's source names it; sent after those bytes. MediaBox
    /// records it with the partial file and gives it back in `MediaResourceFetchRequest.headerRevision`,
    /// so a later fetch that sees another revision can send `replaceHeader`.
    case headerRevision(Int64)

    /// Bytes of the resource this event delivers.
    public var deliveredBytes: Int {
        switch self {
        case .dataPart(_, let data): return data.count
        case .dataWritten(_, let length): return length
        case .replaceHeader(let data): return data.count
        case .resourceSizeUpdated, .headerRevision: return 0
        }
    }
}

/// What MediaBox asks the fetcher for: the resource and the byte ranges still missing
/// (the last range ends at `Int64.max` when the size is unknown), and — for a fetcher that
/// serves ranges by priority — the live wanted ranges (`ranges`): such a fetcher takes its
/// parts from `ranges.nextPart` instead, and ends the stream when that has nothing left.
public struct MediaResourceFetchRequest: Sendable {
    public let resource: any MediaResource
    public let missingRanges: [Range<Int64>]
    public let knownSize: Int64?
    /// Where parts may be written directly (then reported with `.dataWritten` once verified);
    /// a fetcher may ignore it and deliver `.dataPart` events instead.
    public var partWriter: MediaResourcePartWriter? = nil
    /// The ranges wanted now, by priority; they change while the fetch runs (see
    /// `MediaResourceFetchRanges`). A fetcher that ignores them fetches `missingRanges`.
    public var ranges: MediaResourceFetchRanges? = nil
    /// The revision of the header bytes the partial file holds (nil: none recorded).
    public var headerRevision: Int64? = nil
}

/// The injected download function (Telegram-iOS's `fetchResource`): MediaBox knows nothing of the
/// network. CloudCore implements it with MultipartFetch; tests implement it with bytes in memory.
/// The stream ends when the fetcher has delivered what it could; MediaBox completes the file
/// when the ranges cover the size, and fails the fetch otherwise.
public protocol MediaResourceFetcher: Sendable {
    func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error>

    /// Called once MediaBox has completed `resource` from this fetcher's bytes: `reader` is the
    /// complete file, checked against the size and synced like every completed resource, opened
    /// beneath the cache's folder and holding a shared lock (cleanup leaves it alone) until the
    /// call returns, when MediaBox closes it. A fetch that ends incomplete, or a resource another
    /// process completed, never calls it. The fetch's callers wait for it; it cannot fail the
    /// fetch. Default: nothing.
    func fetchCompleted(_ resource: any MediaResource, reader: MediaResourceReader) async
}

extension MediaResourceFetcher {
    public func fetchCompleted(_ resource: any MediaResource, reader: MediaResourceReader) async {}
}

/// A fetcher made from a closure.
public struct ClosureMediaResourceFetcher: MediaResourceFetcher {
    private let body: @Sendable (MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error>
    public init(_ body: @escaping @Sendable (MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error>) {
        self.body = body
    }
    public func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> { body(request) }
}
