import Foundation

/// How a bucket appears in request URLs.
public enum S3Addressing: String, Sendable, Equatable, CaseIterable {
    /// `https://endpoint/bucket/key`: MinIO's and Ceph RGW's usual form, and any endpoint given
    /// as an IP address.
    case path
    /// `https://bucket.endpoint/key`: AWS's preferred form (needs DNS for the bucket's name).
    case virtualHosted = "virtual-hosted"
}

/// Where a bucket lives: the service endpoint, the bucket's name, its region and the addressing
/// style. Builds the request URLs, with keys and query parameters encoded exactly as SigV4's
/// canonical request expects them (so libcurl's signature matches the server's).
public struct S3Bucket: Sendable, Equatable, CustomStringConvertible {
    /// `http(s)://host[:port]`, without a path (e.g. `https://s3.eu-west-1.amazonaws.com`).
    public var endpoint: String
    public var name: String
    public var region: String
    public var addressing: S3Addressing

    public init(endpoint: String, name: String, region: String = "us-east-1", addressing: S3Addressing = .path) {
        var e = endpoint
        while e.hasSuffix("/") { e.removeLast() }
        self.endpoint = e
        self.name = name
        self.region = region
        self.addressing = addressing
    }

    public var description: String { "s3://\(name) at \(endpoint) (\(region), \(addressing.rawValue))" }

    /// Problems with the values, as sentences (empty when usable).
    public var problems: [String] {
        var out: [String] = []
        let lower = endpoint.lowercased()
        if !(lower.hasPrefix("http://") || lower.hasPrefix("https://")) || URL(string: endpoint)?.host == nil {
            out.append("endpoint must be an http:// or https:// URL (got \(endpoint))")
        } else if let path = URL(string: endpoint)?.path, !path.isEmpty, path != "/" {
            out.append("endpoint must not have a path (got \(endpoint))")
        }
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789.-")
        if name.count < 3 || name.count > 63 || !name.allSatisfy(allowed.contains) || name.hasPrefix("-") || name.hasPrefix(".") {
            out.append("bucket must be 3–63 characters of a–z, 0–9, '.' and '-' (got \(name))")
        }
        if region.isEmpty || region.contains(where: { !($0.isLetter || $0.isNumber || $0 == "-") }) {
            out.append("region must be a region name such as us-east-1 (got \(region))")
        }
        return out
    }

    /// The URL of `key` (or of the bucket itself for `nil`), with `query` sorted and encoded.
    public func url(key: String?, query: [(String, String)] = []) -> String {
        var base: String
        switch addressing {
        case .path:
            base = "\(endpoint)/\(name)"
        case .virtualHosted:
            let schemeEnd = endpoint.range(of: "://")!.upperBound
            let scheme = String(endpoint[..<schemeEnd])
            let host = String(endpoint[schemeEnd...])
            base = scheme + name + "." + host
        }
        if let key {
            base += "/" + Self.encodePath(key)
        } else if addressing == .virtualHosted {
            base += "/"
        }
        if !query.isEmpty {
            var pairs: [(name: String, value: String)] = query.map { (Self.encode($0.0), Self.encode($0.1)) }
            // SigV4's canonical query is sorted by name, then value; sending it in that order
            // keeps the signed and the sent forms identical.
            pairs.sort { (a: (name: String, value: String), b: (name: String, value: String)) -> Bool in
                a.name != b.name ? a.name < b.name : a.value < b.value
            }
            base += "?" + pairs.map { $0.name + "=" + $0.value }.joined(separator: "&")
        }
        return base
    }

    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)

    /// SigV4's URI encoding: every byte but the unreserved ones as `%XX` (upper-case hex).
    static func encode(_ s: String, keepSlash: Bool = false) -> String {
        var out = ""
        for b in s.utf8 {
            if unreserved.contains(b) || (keepSlash && b == UInt8(ascii: "/")) {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                out += String(format: "%%%02X", b)
            }
        }
        return out
    }

    static func encodePath(_ key: String) -> String { encode(key, keepSlash: true) }
}
