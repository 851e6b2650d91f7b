import COpenSSL

/// A store's 32-byte key: the AES-256 key of every page of an encrypted SQLite store, used as
/// SQLCipher uses a raw key (`PRAGMA key = "x'…'"`), with no derivation. Never printed:
/// `description`, `debugDescription` and `dump` show `StoreKey(redacted)`.
public struct StoreKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The key's length in bytes.
    public static let byteCount = 32

    private let bytes: [UInt8]

    /// A key from its raw bytes: exactly 32 of them, else `PostboxError.invalidKey`.
    public init(rawBytes: [UInt8]) throws {
        guard rawBytes.count == Self.byteCount else {
            throw PostboxError.invalidKey(reason: "a store key is \(Self.byteCount) bytes, not \(rawBytes.count)")
        }
        bytes = rawBytes
    }

    /// A new key from the system's random generator (`RAND_bytes`).
    public static func random() -> StoreKey {
        var raw = [UInt8](repeating: 0, count: byteCount)
        let ok = raw.withUnsafeMutableBytes { RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(byteCount)) }
        precondition(ok == 1, "the system's random generator failed")
        return try! StoreKey(rawBytes: raw)
    }

    /// Lends the key's 32 bytes to `body`.
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }

    public var description: String { "StoreKey(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
