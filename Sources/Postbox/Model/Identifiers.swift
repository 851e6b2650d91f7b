import Foundation

/// A peer (user, group, channel, secret chat) by its cloud id.
public struct PeerId: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: Int64
    public init(_ rawValue: Int64) { self.rawValue = rawValue }
    public static func < (a: PeerId, b: PeerId) -> Bool { a.rawValue < b.rawValue }
    public var description: String { String(rawValue) }
}

/// A message: peer, namespace (0 = cloud, others for local/scheduled), id within the peer.
public struct MessageId: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public static let cloudNamespace: Int32 = 0

    public let peerId: PeerId
    public let namespace: Int32
    public let id: Int32
    public init(peerId: PeerId, namespace: Int32 = MessageId.cloudNamespace, id: Int32) {
        self.peerId = peerId
        self.namespace = namespace
        self.id = id
    }
    public static func < (a: MessageId, b: MessageId) -> Bool {
        (a.peerId, a.namespace, a.id) < (b.peerId, b.namespace, b.id)
    }
    public var description: String { "\(peerId.rawValue):\(namespace):\(id)" }
}

/// A message's position in its peer's history: ordered by time, then id.
public struct MessageIndex: Hashable, Comparable, Sendable {
    public let id: MessageId
    public let timestamp: Int32
    public init(id: MessageId, timestamp: Int32) {
        self.id = id
        self.timestamp = timestamp
    }
    public static func < (a: MessageIndex, b: MessageIndex) -> Bool {
        (a.id.peerId, a.id.namespace, a.timestamp, a.id.id) < (b.id.peerId, b.id.namespace, b.timestamp, b.id.id)
    }
}

/// A media item (photo, document, …) by namespace and id.
public struct MediaId: Hashable, Sendable, Codable {
    public let namespace: Int32
    public let id: Int64
    public init(namespace: Int32, id: Int64) {
        self.namespace = namespace
        self.id = id
    }
}
