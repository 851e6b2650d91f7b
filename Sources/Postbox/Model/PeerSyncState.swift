import Foundation

/// Where incremental history sync of one peer stands.
public struct PeerSyncState: PostboxCoding, Sendable, Equatable {
    /// Highest message id known to be synced (later runs fetch only ids above it).
    public var maxSyncedId: Int32
    /// When the peer was last synced (Unix seconds).
    public var lastSyncAt: Int64
    /// Messages fetched for this peer over all runs.
    public var totalFetched: Int64

    public init(maxSyncedId: Int32 = 0, lastSyncAt: Int64 = 0, totalFetched: Int64 = 0) {
        self.maxSyncedId = maxSyncedId
        self.lastSyncAt = lastSyncAt
        self.totalFetched = totalFetched
    }

    public init(decoder: PostboxDecoder) throws {
        maxSyncedId = decoder.decodeInt32(forKey: "m") ?? 0
        lastSyncAt = decoder.decodeInt64(forKey: "t") ?? 0
        totalFetched = decoder.decodeInt64(forKey: "n") ?? 0
    }

    public func encode(_ encoder: PostboxEncoder) {
        encoder.encode(maxSyncedId, forKey: "m")
        encoder.encode(lastSyncAt, forKey: "t")
        encoder.encode(totalFetched, forKey: "n")
    }
}
