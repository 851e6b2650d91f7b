import CloudProtocol
import Foundation
import Synchronization

/// The client side of `docs/cloud-protocol.md`: one per account, shared by every job of the
/// process. It routes each call to the right datacenter, follows `FILE_MIGRATE_<n>`, retries
/// transport failures and 5xx answers with exponential backoff and jitter, sleeps through
/// bounded `FLOOD_WAIT_<s>`, decodes error envelopes, and validates answers before anyone
/// stores them.
///
/// ```swift
/// let client = try CloudClient(config: CloudAccountConfig(datacenters: [1: "http://127.0.0.1:40000"]))
/// let page: GetDialogsResponse = try await client.call(.getDialogs, body: GetDialogsRequest(limit: 50))
/// let history = try await client.getHistory(peerId: 1000001, limit: 100)   // typed + checked
/// let part = try await client.send(.getFile, to: .dc(2), body: .data(json))  // raw bytes, retries, migration
/// ```
///
/// Typed calls for every method are in the `CloudClient+…` extensions. Nothing here logs: pass
/// an observer to see retries, flood waits and migrations (names and counts only, no secrets).
public final class CloudClient: Sendable {
    public let config: CloudAccountConfig
    public let transport: any Transport
    private let observer: CloudClientObserver?
    private let counters = Mutex(CloudClientStats())
    private let cdnBase = Mutex<String?>(nil)

    /// Validates `config` (throws `CloudClientError.config`) and uses `transport`, or creates a
    /// `CurlTransport` with the configuration's timeouts.
    public convenience init(config: CloudAccountConfig, transport: (any Transport)? = nil, observer: CloudClientObserver? = nil) throws {
        try config.validate()
        let transport = try transport ?? CurlTransport(configuration: Self.transportConfiguration(for: config))
        self.init(validated: config, transport: transport, observer: observer)
    }

    /// Transport settings for an account: its timeouts and answer size limit.
    public static func transportConfiguration(for config: CloudAccountConfig) -> TransportConfiguration {
        var tc = TransportConfiguration()
        tc.connectTimeout = config.connectTimeout
        tc.requestTimeout = config.requestTimeout
        tc.idleTimeout = min(30, config.requestTimeout)
        tc.maxCollectedBodySize = max(config.maxAnswerSize, 2 << 20)
        return tc
    }

    private init(validated config: CloudAccountConfig, transport: any Transport, observer: CloudClientObserver?) {
        self.config = config
        self.observer = observer
        self.transport = transport
        cdnBase.withLock { $0 = config.cdnURL.map(CloudAccountConfig.trimmed) }
    }

    /// A client sharing this one's configuration and transport (so its connections) that
    /// reports its events to `observer`: one per job, for the job's log.
    public func with(observer: @escaping CloudClientObserver) -> CloudClient {
        let derived = CloudClient(validated: config, transport: transport, observer: observer)
        if let cdn = cdnBase.withLock({ $0 }) { derived.noteCdnURL(cdn) }
        return derived
    }

    /// A client with this one's configuration on a transport of its own, sized for `connections`
    /// requests in flight and, when given, capped at `receiveLimit` / `sendLimit` bytes per second
    /// over all its transfers: for a job that needs more connections than the shared pool, or a
    /// bandwidth cap that must not slow the other jobs.
    public func withOwnTransport(
        connections: Int, receiveLimit: Int? = nil, sendLimit: Int? = nil,
        observer: CloudClientObserver? = nil
    ) throws -> CloudClient {
        var tc = Self.transportConfiguration(for: config)
        tc.maxConnectionsPerHost = max(16, connections)
        tc.maxTotalConnections = max(64, connections + 8)
        tc.handlePoolSize = max(64, connections + 8)
        tc.maxReceiveBytesPerSecond = receiveLimit
        tc.maxSendBytesPerSecond = sendLimit
        let derived = CloudClient(validated: config, transport: try CurlTransport(configuration: tc), observer: observer ?? self.observer)
        if let cdn = cdnBase.withLock({ $0 }) { derived.noteCdnURL(cdn) }
        return derived
    }

    /// What this client did so far.
    public var stats: CloudClientStats { counters.withLock { $0 } }

    /// Remembers the CDN base URL learnt from a redirect, for later `.cdn` calls.
    public func noteCdnURL(_ url: String) {
        guard CloudAccountConfig.isHTTPURL(url) else { return }
        cdnBase.withLock { $0 = CloudAccountConfig.trimmed(url) }
    }

    // MARK: JSON calls

    /// Calls `method` with `body` encoded as JSON at `dc` (default: the main DC) and decodes
    /// the answer as `Response`. Throws `CloudClientError` (or `CancellationError`).
    public func call<Response: Decodable>(
        _ method: CloudMethod, dc: Int? = nil, body: some Encodable,
        as type: Response.Type = Response.self
    ) async throws -> Response {
        try await call(method, endpoint: dc.map(CloudEndpoint.dc) ?? .main, body: body, as: type)
    }

    /// `call` at any endpoint (a DC, the CDN, a redirect's base URL).
    public func call<Response: Decodable>(
        _ method: CloudMethod, endpoint: CloudEndpoint, body: some Encodable,
        as type: Response.Type = Response.self
    ) async throws -> Response {
        let data: Data
        do {
            data = try CloudJSON.encoder.encode(body)
        } catch {
            throw CloudClientError.config("cannot encode the \(method.rawValue) request: \(error)")
        }
        let answer = try await send(
            method, to: endpoint, body: .data(data),
            destination: .collect(maxSize: config.maxAnswerSize))
        return try decode(type, from: answer, method: method)
    }

    /// Decodes a JSON answer, turning any failure into `CloudClientError.badAnswer` that says
    /// where the shape broke (never the body itself, which may hold references).
    public func decode<T: Decodable>(_ type: T.Type, from answer: CloudAnswer, method: CloudMethod) throws -> T {
        do {
            return try CloudJSON.decoder.decode(T.self, from: answer.response.body)
        } catch let error as DecodingError {
            throw CloudClientError.badAnswer(
                method: method.rawValue, dc: answer.endpoint.description,
                reason: CloudJSON.explain(error, bodySize: answer.response.body.count, expected: "\(T.self)"))
        }
    }

    // MARK: Raw calls

    /// Sends one API request and returns its successful answer. Handles, in order: routing
    /// (`endpoint`), retries with backoff for retryable transport failures and 5xx, `FLOOD_WAIT`
    /// (bounded by the retry policy), `FILE_MIGRATE_<n>` (when `followMigrations`), and turns every
    /// other error answer into `CloudClientError.server` (unknown names: `.badAnswer`).
    ///
    /// `query` is appended as `?k=v&…` (the upload part calls' integer parameters, named by
    /// `UploadQuery`). A retried request resends `body` from its start and rewrites
    /// `destination` from its start.
    public func send(
        _ method: CloudMethod, to endpoint: CloudEndpoint = .main, query: [(String, Int64)] = [],
        body: RequestBody, contentType: String = "application/json",
        destination: ResponseDestination = .collect, timeout: Double? = nil,
        followMigrations: Bool = true
    ) async throws -> CloudAnswer {
        var target = endpoint
        var attempts = 0
        var retries = 0
        var floodWaits = 0
        var migrations = 0
        let policy = config.retry
        let name = method.rawValue
        do {
            while true {
                try Task.checkCancellation()
                let (base, dc) = try resolve(target)
                var headers = [HTTPHeader("Accept", "application/json")]
                if case .none = body {} else { headers.append(HTTPHeader("Content-Type", contentType)) }
                if let token = config.authToken { headers.append(HTTPHeader("Authorization", "Bearer " + token)) }
                let request = HTTPRequest(
                    url: base + method.path + Self.queryString(query), method: .post, headers: headers,
                    body: body, destination: destination, timeout: timeout ?? config.requestTimeout)
                attempts += 1
                counters.withLock { $0.requests += 1 }
                let response: HTTPResponse
                do {
                    response = try await transport.send(request)
                } catch let error as TransportError {
                    if case .tooLarge(let limit, let received) = error {
                        throw CloudClientError.badAnswer(
                            method: name, dc: target.description,
                            reason: "answer too large: \(received) bytes, limit \(limit)")
                    }
                    guard error.isRetryable else { throw CloudClientError.transport(method: name, dc: target.description, underlying: error) }
                    retries += 1
                    guard retries < policy.maxAttempts else {
                        throw CloudClientError.unavailable(method: name, dc: target.description, attempts: attempts, underlying: error)
                    }
                    try await backoff(retries, method: name, target: target, reason: Self.shortReason(error))
                    continue
                }
                if response.isSuccess {
                    return CloudAnswer(response: response, endpoint: target, dc: dc, attempts: attempts)
                }
                let error = try Self.errorOf(response, method: name, target: target)
                switch error.name {
                case .fileMigrate(let to) where followMigrations:
                    migrations += 1
                    guard migrations <= policy.maxMigrations, to != dc else {
                        throw CloudClientError.server(error, method: name, dc: target.description)
                    }
                    guard config.datacenters[to] != nil else {
                        throw CloudClientError.config("\(name) was sent to DC \(to) (FILE_MIGRATE_\(to)) but no URL is configured for DC \(to)")
                    }
                    counters.withLock { $0.migrations += 1 }
                    observer?(.migrate(method: name, from: target.description, to: to))
                    target = .dc(to)
                    continue
                case .floodWait(let seconds):
                    floodWaits += 1
                    guard Double(seconds) <= policy.maxFloodWait, floodWaits <= policy.maxFloodWaits else {
                        throw CloudClientError.server(error, method: name, dc: target.description)
                    }
                    counters.withLock { $0.floodWaits += 1 }
                    observer?(.floodWait(method: name, endpoint: target.description, seconds: seconds))
                    // A little jitter so that waiters do not all come back in the same instant.
                    try await Task.sleep(nanoseconds: UInt64((Double(seconds) + Double.random(in: 0...0.1)) * 1e9))
                    continue
                default:
                    break
                }
                if error.code >= 500 {
                    retries += 1
                    guard retries < policy.maxAttempts else { throw CloudClientError.server(error, method: name, dc: target.description) }
                    try await backoff(retries, method: name, target: target, reason: "\(error.code) \(error.name.rawValue)")
                    continue
                }
                if case .other(let unknown) = error.name {
                    throw CloudClientError.badAnswer(
                        method: name, dc: target.description,
                        reason: "unknown error name \(Self.printable(unknown)) (HTTP \(response.status))")
                }
                throw CloudClientError.server(error, method: name, dc: target.description)
            }
        } catch {
            counters.withLock { $0.failures += 1 }
            throw error
        }
    }

    /// The base URL and DC id of an endpoint.
    func resolve(_ endpoint: CloudEndpoint) throws -> (String, Int?) {
        switch endpoint {
        case .main:
            return (config.baseURL(ofDc: config.mainDc)!, config.mainDc)
        case .dc(let id):
            guard let url = config.baseURL(ofDc: id) else {
                throw CloudClientError.config("no URL configured for DC \(id) (configured: \(config.datacenters.keys.sorted()))")
            }
            return (url, id)
        case .cdn:
            guard let url = cdnBase.withLock({ $0 }) else { throw CloudClientError.config("no CDN URL configured or learnt from a redirect yet") }
            return (url, nil)
        case .baseURL(let url):
            guard CloudAccountConfig.isHTTPURL(url) else { throw CloudClientError.config("not an http(s) base URL: \(url)") }
            return (CloudAccountConfig.trimmed(url), nil)
        }
    }

    private func backoff(_ retry: Int, method: String, target: CloudEndpoint, reason: String) async throws {
        let delay = config.retry.delay(beforeRetry: retry)
        counters.withLock { $0.retries += 1 }
        observer?(.retry(method: method, endpoint: target.description, attempt: retry + 1, delay: delay, reason: reason))
        if delay > 0 { try await Task.sleep(nanoseconds: UInt64(delay * 1e9)) }
    }

    /// The protocol error in a non-2xx answer: the JSON envelope, else the `X-Cloud-Error`
    /// header, else (5xx only) a generic server failure.
    static func errorOf(_ response: HTTPResponse, method: String, target: CloudEndpoint) throws -> CloudError {
        if let envelope = try? CloudJSON.decoder.decode(CloudErrorEnvelope.self, from: response.body) {
            var e = envelope.error
            e.code = response.status
            return e
        }
        if let header = response.header(CloudHeader.error), !header.isEmpty {
            return CloudError(code: response.status, name: CloudErrorName(parsing: header.trimmingCharacters(in: .whitespaces)))
        }
        if response.status >= 500 {
            return CloudError(code: response.status, name: .internalError, message: "HTTP \(response.status) without an error envelope")
        }
        throw CloudClientError.badAnswer(
            method: method, dc: target.description,
            reason: "HTTP \(response.status) without an error envelope (\(response.body.count) bytes)")
    }

    /// `?k=v&…`: the names are the protocol's own (`UploadQuery`, plain letters) and the values
    /// integers, so nothing needs percent-encoding (this runs for every part sent).
    static func queryString(_ query: [(String, Int64)]) -> String {
        query.isEmpty ? "" : "?" + query.map { "\($0)=\($1)" }.joined(separator: "&")
    }

    static func shortReason(_ error: TransportError) -> String {
        switch error {
        case .connectFailed: return "connect failed"
        case .timedOut(let kind, _, _): return "\(kind.rawValue) timeout"
        case .connectionDropped(_, _, let received): return "connection dropped after \(received) bytes"
        default: return error.description
        }
    }

    /// An unknown error name as it may be shown: printable ASCII, at most 64 characters.
    static func printable(_ s: String) -> String {
        String(s.unicodeScalars.prefix(64).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7f ? Character($0) : "?" })
    }
}
