import CloudCore
import Foundation

/// A Prometheus Pushgateway that a run's metrics are pushed to, for runs no textfile collector
/// sees (a Kubernetes CronJob's pod is gone before any scrape). The run's metrics file is sent
/// as it is (the same metric names) with `PUT`, replacing the group of the job and its
/// accounts: `/metrics/job/jobrun/jobrun_job@base64/<job>/account/<ids>`.
///
/// The URL names a host and an optional path prefix, never credentials: a URL with a user,
/// password, query or fragment is refused, so no secret can reach a log line, an argument list
/// or an error. Only `redacted` (scheme, host and port) is ever logged.
public struct Pushgateway: Sendable, Hashable {
    /// The URL without a trailing slash.
    public let base: String

    /// Why `text` cannot be a Pushgateway URL, or nil. Never repeats the text (it may carry a
    /// password by mistake).
    public static func problem(_ text: String) -> String? {
        guard !text.contains(where: \.isWhitespace), let components = URLComponents(string: text),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https", components.host?.isEmpty == false
        else { return "must be an absolute http:// or https:// URL with a host" }
        if components.user != nil || components.password != nil {
            return "must not hold credentials (user:password@): put the Pushgateway behind a network policy or a proxy that adds them"
        }
        if components.query != nil || components.fragment != nil { return "must not have a query or fragment" }
        return nil
    }

    /// The Pushgateway at `text`, or nil when `problem(text)` has one.
    public init?(_ text: String) {
        guard Self.problem(text) == nil else { return nil }
        var base = text
        while base.hasSuffix("/") { base.removeLast() }
        self.base = base
    }

    /// `scheme://host[:port]`: what is logged.
    public var redacted: String {
        guard let components = URLComponents(string: base), let scheme = components.scheme, let host = components.host else { return "(Pushgateway)" }
        return "\(scheme)://\(host)\(components.port.map { ":\($0)" } ?? "")"
    }

    /// The group of `job` run for `accounts`: `job="jobrun"`, `jobrun_job` (base64url, so any
    /// job name is one path segment) and `account` (the ids joined by `,`).
    public func groupURL(job: String, accounts: [Int64]) -> String {
        let encoded = Data(job.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        return "\(base)/metrics/job/jobrun/\(MetricsWriter.jobLabel)@base64/\(encoded)/account/\(accounts.map(String.init).joined(separator: ","))"
    }

    /// Time one push may take.
    public static let timeout: Double = 10

    /// Replaces the group of `job` and `accounts` with `text` (Prometheus text format).
    public func push(_ text: String, job: String, accounts: [Int64]) async throws(PushError) {
        var configuration = TransportConfiguration()
        configuration.connectTimeout = Self.timeout
        let response: HTTPResponse
        do {
            let transport = try CurlTransport(configuration: configuration)
            response = try await transport.send(
                HTTPRequest(
                    url: groupURL(job: job, accounts: accounts), method: .put,
                    headers: [HTTPHeader("Content-Type", "text/plain; version=0.0.4; charset=utf-8")], body: .data(Data(text.utf8)),
                    timeout: Self.timeout))
        } catch {
            throw PushError(message: LogRedaction.redactString("\(error)").replacingOccurrences(of: base, with: redacted))
        }
        guard (200..<300).contains(response.status) else {
            let answer = String(decoding: response.body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw PushError(message: "HTTP \(response.status)\(answer.isEmpty ? "" : ": \(answer)")")
        }
    }

    public struct PushError: Error, Sendable {
        public var message: String
    }
}
