import CloudCrypto
import CloudProtocol
import Foundation
import MediaBox

/// A `MediaResource` that `MultipartFetch` knows how to download: it says where its bytes come
/// from. Every resource type of this folder conforms.
public protocol CloudFetchableResource: MediaResource {
    /// Where and how to fetch the bytes (location, current file reference, parent, keys).
    var fetchSource: ResourceFetchSource { get }
}

/// Where a resource's bytes come from. Holds secrets (file references, keys): its description
/// shows none of them.
public enum ResourceFetchSource: Sendable, CustomStringConvertible {
    /// `upload.getFile` at the location's DC (following migration and CDN redirects) with the
    /// parent's current file reference.
    case cloud(location: FileLocation, fileReference: FileReference, parent: MediaResourceReference)
    /// A secret-chat file: the AES-256-IGE container from `upload.getFile`, decrypted in order
    /// and trimmed to `decryptedSize`.
    case secret(location: FileLocation, key: SecretFileKey, keyFingerprint: Int32, containerSize: Int64, decryptedSize: Int64)
    /// Any HTTP(S) server with Range support (nginx, `cloudd`'s `/plain/<id>`).
    case plainURL(String)

    public var description: String {
        switch self {
        case let .cloud(location, _, parent): return "cloud(\(location.stableKey), parent: \(parent))"
        case let .secret(location, _, _, containerSize, decryptedSize):
            return "secret(\(location.stableKey), container: \(containerSize), decrypted: \(decryptedSize))"
        case .plainURL: return "plainURL"
        }
    }
}

/// Helpers shared by the resource types.
enum ResourceIds {
    /// Lowercase hex SHA-256 of a string (ids that must not reveal their input, e.g. URLs).
    static func hash(_ s: String) -> String { SHA256.hash(Data(s.utf8)).hexString }
}
