import Foundation

/// A heartbeat endpoint in the healthchecks.io convention: `GET <url>/start` when a run starts,
/// `<url>` when it succeeds, `<url>/fail` when it fails. The URL usually holds a secret (the
/// check's UUID or ping key): only `redacted` is ever logged.
public struct HeartbeatURL: Sendable, Hashable {
    public let base: String

    /// `base` with `{job}` replaced by the job's name (a default for every job:
    /// `https://hc-ping.com/<ping-key>/{job}` pings the check whose slug is the job name).
    public init(_ base: String, job: String) {
        var text = base.replacingOccurrences(of: "{job}", with: job)
        while text.hasSuffix("/") { text.removeLast() }
        self.base = text
    }

    /// What a ping reports.
    public enum Signal: String, Sendable {
        case start, success, fail
    }

    public func url(_ signal: Signal) -> String {
        switch signal {
        case .start: return base + "/start"
        case .success: return base
        case .fail: return base + "/fail"
        }
    }

    /// `scheme://host[:port]/…`: enough to tell which service was pinged, nothing of the path
    /// or query (where the secret is).
    public var redacted: String {
        guard let components = URLComponents(string: base), let scheme = components.scheme, let host = components.host else { return "(heartbeat URL)" }
        return "\(scheme)://\(host)\(components.port.map { ":\($0)" } ?? "")/…"
    }

    /// An absolute http(s) URL with a host and no whitespace.
    public static func isValid(_ text: String) -> Bool {
        guard !text.contains(where: \.isWhitespace), let components = URLComponents(string: text.replacingOccurrences(of: "{job}", with: "job")),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https", components.host?.isEmpty == false
        else { return false }
        return true
    }
}
