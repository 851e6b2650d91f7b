import COpenSSL
import Foundation

/// A resource's globally unique, stable id (e.g. `telegram-cloud-document-2-123456`).
///
/// Ids come from the network and from other processes, so they are untrusted: the file name is
/// always `safeFileName`, never the raw id. `safeFileName` keeps `[A-Za-z0-9-]` and writes every
/// other byte of the UTF-8 form as `%XX` (so `/`, `.`, `_`, NUL, control characters, fullwidth
/// solidus, RTL overrides and every other non-ASCII trick become inert ASCII); a name longer than
/// `maxFileNameLength` keeps a 64-byte prefix plus `~` and the SHA-256 of the id. The result is
/// never empty, `.` or `..`, never contains `/` or `_` (so it cannot collide with the
/// `_partial` / `_partial.want` companions), never equals a reserved subdirectory name, and the
/// mapping is injective (up to SHA-256 collisions for hashed names).
public struct MediaResourceId: Hashable, Sendable, Codable, CustomStringConvertible {
    public let stringRepresentation: String

    public init(_ string: String) { self.stringRepresentation = string }

    public var description: String { stringRepresentation }

    /// The longest file name `safeFileName` returns (the `_partial.want` companion adds 13).
    public static let maxFileNameLength = 128
    /// Names used by MediaBox subdirectories: an id that escapes to one of these is re-escaped.
    static let reservedNames: Set<String> = ["cache", "short-cache", "storage", "cache-storage", "animation-cache"]

    /// The id as a file name that cannot leave the directory it is joined to.
    public var safeFileName: String { Self.safeFileName(for: stringRepresentation) }

    static func isPlain(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte == 0x2d
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    static func safeFileName(for id: String) -> String {
        let bytes = Array(id.utf8)
        if bytes.isEmpty { return "%" }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for b in bytes {
            if isPlain(b) {
                out.append(b)
            } else {
                out.append(0x25)
                out.append(hexDigits[Int(b >> 4)])
                out.append(hexDigits[Int(b & 0xf)])
            }
        }
        if out.count > maxFileNameLength {
            // Keep a readable prefix, cut on an escape boundary, then the hash of the whole id.
            var cut = 64
            while cut > 0 && (out[cut - 1] == 0x25 || (cut >= 2 && out[cut - 2] == 0x25)) { cut -= 1 }
            return String(decoding: out[..<cut], as: UTF8.self) + "~" + sha256Hex(bytes)
        }
        var name = String(decoding: out, as: UTF8.self)
        if reservedNames.contains(name) {
            // Escape the first character: a plain character is never escaped otherwise, so this
            // cannot collide with another id.
            name = "%" + String(format: "%02X", out[0]) + String(decoding: out[1...], as: UTF8.self)
        }
        return name
    }

    /// The SHA-256 of `bytes` in lowercase hex.
    private static func sha256Hex(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        guard EVP_Digest(bytes, bytes.count, &digest, nil, EVP_sha256(), nil) == 1 else { fatalError("EVP_Digest(sha256) failed") }
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `name` is a name `safeFileName` can produce (reconciliation uses this to tell
    /// MediaBox files from strangers).
    public static func isSafeFileName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        if name == "%" { return true }
        guard !bytes.isEmpty, bytes.count <= maxFileNameLength + 1 + 64 else { return false }
        var i = 0
        var sawTilde = false
        while i < bytes.count {
            let b = bytes[i]
            if isPlain(b) { i += 1; continue }
            if b == 0x25, i + 2 < bytes.count,
                hexDigits.contains(bytes[i + 1]), hexDigits.contains(bytes[i + 2])
            {
                i += 3; continue
            }
            if b == 0x7e, !sawTilde, bytes.count - i - 1 == 64 { sawTilde = true; i += 1; continue }
            if sawTilde, (b >= 0x61 && b <= 0x66) { i += 1; continue }
            return false
        }
        return !reservedNames.contains(name)
    }

    /// The id a safe file name came from, when it was not hash-truncated (reconciliation
    /// re-indexes orphan files with it).
    public init?(safeFileName name: String) {
        if name == "%" { self.init(""); return }
        guard Self.isSafeFileName(name), !name.contains("~") else { return nil }
        var bytes: [UInt8] = []
        let src = Array(name.utf8)
        var i = 0
        while i < src.count {
            if src[i] == 0x25, i + 2 < src.count,
                let v = UInt8(String(decoding: src[(i + 1)...(i + 2)], as: UTF8.self), radix: 16)
            {
                bytes.append(v)
                i += 3
            } else {
                bytes.append(src[i])
                i += 1
            }
        }
        guard let s = String(validating: bytes, as: UTF8.self) else { return nil }
        self.init(s)
    }
}
