import Foundation

/// One account's view of the cloud: which URL each datacenter has, the CDN, the DC to use for
/// calls that may go anywhere, the credentials, timeouts and retry policy.
///
/// Read from `<root>/account-<id>/config.yaml` by the Jobs layer (`docs/account-config.md`).
/// `authToken` is a secret: `description`, `debugDescription` and mirrors never show it.
public struct CloudAccountConfig: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// DC id → base URL (`http://127.0.0.1:40000`), no trailing slash needed.
    public var datacenters: [Int: String]
    /// The CDN's base URL, if known in advance (redirects also carry it).
    public var cdnURL: String?
    /// The DC for calls not tied to a file (chat list, history, entities, uploads).
    public var mainDc: Int
    /// Sent as `Authorization: Bearer <token>` when set. Secret.
    public var authToken: String?
    /// Total time allowed for one HTTP exchange, in seconds.
    public var requestTimeout: Double
    /// Time allowed to connect, in seconds.
    public var connectTimeout: Double
    /// Largest JSON answer accepted, in bytes (a larger one is a bad answer).
    public var maxAnswerSize: Int
    public var retry: CloudRetryPolicy
    /// How long a file reference stays valid after it was obtained, in seconds (cloudd's
    /// `--reference-ttl`, default 3600): what "expires within" means for revalidation.
    public var referenceTTL: Double = 3600

    // The values `problems` accepts, declared once: `config.yaml`'s schema uses them too.

    /// A datacenter's id, and so `mainDc`.
    public static let datacenterIdRange: ClosedRange<Int> = 1...1000
    /// `requestTimeout`, in seconds.
    public static let requestTimeoutRange: ClosedRange<Double> = 0.001...3600
    /// `connectTimeout`, in seconds.
    public static let connectTimeoutRange: ClosedRange<Double> = 0.001...600
    /// `referenceTTL`, in seconds: 1 second to 30 days.
    public static let referenceTTLRange: ClosedRange<Double> = 1...(30 * 86_400)
    /// `maxAnswerSize`, in bytes: 1 KiB to 1 GiB.
    public static let maxAnswerSizeRange: ClosedRange<Int> = 1024...(1 << 30)

    public init(
        datacenters: [Int: String], cdnURL: String? = nil, mainDc: Int? = nil, authToken: String? = nil,
        requestTimeout: Double = 30, connectTimeout: Double = 10, maxAnswerSize: Int = 16 << 20,
        retry: CloudRetryPolicy = CloudRetryPolicy()
    ) {
        self.datacenters = datacenters
        self.cdnURL = cdnURL
        self.mainDc = mainDc ?? datacenters.keys.min() ?? 1
        self.authToken = authToken
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
        self.maxAnswerSize = maxAnswerSize
        self.retry = retry
    }

    /// Problems with the values, as sentences (empty when valid).
    public var problems: [String] {
        var out: [String] = []
        if datacenters.isEmpty { out.append("no datacenters configured") }
        for (id, url) in datacenters.sorted(by: { $0.key < $1.key }) {
            if !Self.datacenterIdRange.contains(id) { out.append("datacenter id \(id) must be \(Self.datacenterIdRange.shownBounds)") }
            if !Self.isHTTPURL(url) { out.append("datacenter \(id) URL must be an http:// or https:// URL (got \(Self.shown(url)))") }
        }
        if datacenters[mainDc] == nil, !datacenters.isEmpty { out.append("mainDc \(mainDc) is not among the datacenters \(datacenters.keys.sorted())") }
        if let cdnURL, !Self.isHTTPURL(cdnURL) { out.append("cdn URL must be an http:// or https:// URL (got \(Self.shown(cdnURL)))") }
        if let authToken, authToken.isEmpty || authToken.contains(where: { $0.isNewline }) {
            out.append("the auth token must be one non-empty line")
        }
        if !Self.requestTimeoutRange.contains(requestTimeout) {
            out.append("requestTimeout must be \(Self.requestTimeoutRange.shownBounds) seconds")
        }
        if !Self.connectTimeoutRange.contains(connectTimeout) {
            out.append("connectTimeout must be \(Self.connectTimeoutRange.shownBounds) seconds")
        }
        if !Self.referenceTTLRange.contains(referenceTTL) { out.append("referenceTTL must be \(Self.referenceTTLRange.shownBounds) seconds") }
        if !Self.maxAnswerSizeRange.contains(maxAnswerSize) { out.append("maxAnswerSize must be \(Self.maxAnswerSizeRange.shownBounds) bytes") }
        return out + retry.problems
    }

    /// Throws `CloudClientError.config` listing every problem.
    public func validate() throws(CloudClientError) {
        let p = problems
        if !p.isEmpty { throw .config(p.joined(separator: "; ")) }
    }

    /// Base URL of DC `id`, without a trailing slash.
    public func baseURL(ofDc id: Int) -> String? { datacenters[id].map(Self.trimmed) }

    static func trimmed(_ url: String) -> String {
        var s = url
        while s.hasSuffix("/") { s.removeLast() }
        return s
    }

    /// A configured URL as an error may show it: one short word without user information
    /// (`user:password@`). Anything else — white space (a quote left open swallows the lines
    /// after it, folded into one), control characters, great length — is described by its
    /// length only, so an error never echoes a credential or a stretch of the file.
    static func shown(_ url: String) -> String {
        guard url.utf8.count <= 200, !url.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7f })
        else {
            return "a value of \(url.count) characters, not shown"
        }
        guard let at = url.firstIndex(of: "@"), let scheme = url.range(of: "://"), scheme.upperBound <= at,
            !url[scheme.upperBound..<at].contains("/")
        else { return "'\(url)'" }
        return "'\(url[..<scheme.upperBound])…@\(url[url.index(after: at)...])'"
    }

    static func isHTTPURL(_ s: String) -> Bool {
        guard let u = URL(string: s), let scheme = u.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        return u.host?.isEmpty == false
    }

    public var description: String {
        let dcs = datacenters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        return
            "CloudAccountConfig(dcs: [\(dcs)], cdn: \(cdnURL ?? "none"), mainDc: \(mainDc), authToken: \(authToken == nil ? "unset" : "[redacted]"), requestTimeout: \(requestTimeout)s)"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "datacenters": datacenters, "cdnURL": cdnURL as Any, "mainDc": mainDc,
                "authToken": authToken == nil ? "unset" : "[redacted]",
                "requestTimeout": requestTimeout, "retry": retry,
            ], displayStyle: .struct)
    }
}
