import Foundation
import Synchronization

/// A value stored in Postbox through `PostboxEncoder`/`PostboxDecoder`.
///
/// Decoding is by field name, so a reader ignores fields it does not know (a newer writer may
/// add fields) and sees `nil` for fields an older writer did not write.
public protocol PostboxCoding: Sendable {
    /// The stable name whose hash identifies the type on disk. Defaults to the type's own name;
    /// override it before renaming a type, or stored objects stop decoding polymorphically.
    static var postboxTypeName: String { get }
    init(decoder: PostboxDecoder) throws
    func encode(_ encoder: PostboxEncoder)
}

public extension PostboxCoding {
    /// The type's unqualified name, the text `String(describing: Self.self)` prints, read
    /// straight from its metadata: `String(describing:)` would first ask the runtime whether the
    /// metatype conforms to three printing protocols, each a scan of every conformance record
    /// of the process the first time a type is stored or read.
    static var postboxTypeName: String { _typeName(Self.self, qualified: false) }
    /// The hash of `postboxTypeName`, computed once per type (the default name comes from
    /// runtime metadata, too slow to repeat for every record).
    static var postboxTypeHash: Int32 { PostboxTypeHashCache.hash(of: Self.self) }
}

/// Type hashes by type, so encoding and decoding a record costs one locked lookup.
enum PostboxTypeHashCache {
    private static let cache = Mutex<[ObjectIdentifier: Int32]>([:])

    static func hash<T: PostboxCoding>(of type: T.Type) -> Int32 {
        let id = ObjectIdentifier(type)
        if let hash = cache.withLock({ $0[id] }) { return hash }
        let hash = typeNameHash(T.postboxTypeName)
        cache.withLock { $0[id] = hash }
        return hash
    }
}

/// FNV-1a over the UTF-8 of `name`: stable across builds, platforms and Swift versions.
public func typeNameHash(_ name: String) -> Int32 {
    var h: UInt32 = 0x811c9dc5
    for b in name.utf8 {
        h ^= UInt32(b)
        h = h &* 0x01000193
    }
    return Int32(bitPattern: h)
}

/// Maps type hashes to decoders so `decodeObject(forKey:)` can return the concrete type that was
/// stored (e.g. any `Media` of a message). Register every polymorphically stored type at start-up.
public enum PostboxTypeRegistry {
    private static let decoders = Mutex<[Int32: @Sendable (PostboxDecoder) throws -> any PostboxCoding]>([:])

    /// Makes `type` decodable by its hash. Registering the same type twice is harmless.
    public static func register<T: PostboxCoding>(_ type: T.Type) {
        decoders.withLock { $0[T.postboxTypeHash] = { try T(decoder: $0) } }
    }

    static func decoder(for hash: Int32) -> (@Sendable (PostboxDecoder) throws -> any PostboxCoding)? {
        decoders.withLock { $0[hash] }
    }
}
