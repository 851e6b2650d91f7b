import CloudProtocol
import Foundation
import TestSupport
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The built `cloudd` executable as a child process on loopback, with its URLs (from the JSON
/// line it prints when ready) and a few admin calls.
final class ClouddProcess: @unchecked Sendable {
    struct Ready: Decodable {
        let dcs: [DcOption]
        let cdn: DcOption
        let admin: String
    }

    let process: ChildProcess
    let ready: Ready

    /// Starts `cloudd` with ephemeral ports and waits for its ready line.
    init(_ arguments: [String]) throws {
        let exe = try Products.builtExecutable("cloudd")
        process = try ChildProcess(exe, ["--port-base", "0"] + arguments)
        guard process.waitForOutput("\n", timeout: 60),
            let line = process.stdout.split(separator: "\n").first
        else {
            process.signal(SIGKILL)
            process.wait()
            throw NSError(domain: "cloudd", code: 1, userInfo: [NSLocalizedDescriptionKey: "cloudd did not start: \(process.stderr)"])
        }
        ready = try JSONDecoder().decode(Ready.self, from: Data(line.utf8))
    }

    /// `account-<id>/config.yaml` text for this server (fast retries for tests).
    func accountConfig(credentialsFile: String? = nil) -> String {
        var text = "datacenters:\n"
        for dc in ready.dcs { text += "  \(dc.id): \(dc.url)\n" }
        text += "cdn: \(ready.cdn.url)\nmainDc: 1\nrequestTimeout: 20s\nconnectTimeout: 2s\n"
        if let credentialsFile { text += "credentialsFile: \(credentialsFile)\n" }
        text += "retry:\n  maxAttempts: 3\n  baseDelay: 50ms\n  maxDelay: 200ms\n"
        return text
    }

    func stop() {
        process.signal(SIGTERM)
        process.wait(timeout: 10)
    }

    // MARK: Admin

    func admin<T: Decodable>(_ path: String, method: String = "GET", body: Data? = nil, as type: T.Type) throws -> T {
        var request = URLRequest(url: URL(string: ready.admin + "/admin/" + path)!)
        request.httpMethod = method
        request.httpBody = body
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        return try JSONDecoder().decode(T.self, from: send(request))
    }

    /// The bytes of `range` of a file from the plain Range route, as curl would fetch them.
    func plainBytes(_ id: Int64, _ range: Range<Int64>) throws -> Data {
        var request = URLRequest(url: URL(string: ready.admin + "/plain/\(id)")!)
        request.setValue("bytes=\(range.lowerBound)-\(range.upperBound - 1)", forHTTPHeaderField: "Range")
        return try send(request)
    }

    /// Gives a streamable video a new header (`POST /admin/files/<id>/revise-header`).
    func reviseHeader(_ id: Int64) throws -> HeaderRevision {
        try admin("files/\(id)/revise-header", method: "POST", body: Data("{}".utf8), as: HeaderRevision.self)
    }

    private func send(_ request: URLRequest) throws -> Data {
        let box = ResultBox()
        let semaphore = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, _, error in
            box.data = data
            box.error = error
            semaphore.signal()
        }.resume()
        semaphore.wait()
        if let error = box.error { throw error }
        return box.data ?? Data()
    }

    func dataset() throws -> DatasetListing { try admin("dataset", as: DatasetListing.self) }
    func counters() throws -> CountersResponse { try admin("counters", as: CountersResponse.self) }
    func resetCounters() throws { _ = try admin("counters/reset", method: "POST", body: Data("{}".utf8), as: OkResponse.self) }
    func addMessages(peerId: Int64, count: Int) throws -> MessagesResponse {
        try admin(
            "messages/add", method: "POST", body: try JSONEncoder().encode(AddMessagesRequest(peerId: peerId, count: count, withMedia: true)),
            as: MessagesResponse.self)
    }

    /// Expires every reference issued so far (`POST /admin/references/expire`).
    func expireReferences() throws {
        _ = try admin("references/expire", method: "POST", body: try JSONEncoder().encode(ExpireReferencesRequest()), as: OkResponse.self)
    }

    /// Applies the fields present in `faults` (`POST /admin/faults`).
    func setFaults(_ faults: FaultConfig) throws {
        _ = try admin("faults", method: "POST", body: try JSONEncoder().encode(faults), as: FaultConfig.self)
    }

    /// One file's admin description, with its SHA-256 (`GET /admin/files/<id>`).
    func fileInfo(_ id: Int64) throws -> FileInfo { try admin("files/\(id)", as: FileInfo.self) }

    private final class ResultBox: @unchecked Sendable {
        var data: Data?
        var error: Error?
    }
}
