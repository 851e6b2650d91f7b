import CloudCore
import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import MediaBox
import Postbox
import Synchronization
import TestSupport
import XCTest

/// A real in-process cloudd, a real libcurl transport, a real MediaBox directory: what the
/// MultipartFetch and resource tests download with.
final class FetchFixture: @unchecked Sendable {
    let server: CloudServer
    let transport: CurlTransport
    let directory: TemporaryDirectory

    static func start(_ configure: (inout CloudServerConfig) -> Void = { _ in }) async throws -> FetchFixture {
        var c = CloudServerConfig()
        c.seed = 42
        c.dcCount = 3
        c.dataset.peers = 5
        c.dataset.messagesPerPeer = 12
        c.dataset.maxMediaSize = 3 << 20
        configure(&c)
        let server = try await CloudServer.start(c)
        return FetchFixture(server: server, transport: try CurlTransport(), directory: TemporaryDirectory(prefix: "multipart-fetch"))
    }

    private init(server: CloudServer, transport: CurlTransport, directory: TemporaryDirectory) {
        self.server = server
        self.transport = transport
        self.directory = directory
    }

    func stop() async { await server.stop() }

    var datacenters: [Int: String] {
        var d: [Int: String] = [:]
        for (i, url) in server.dcURLs.enumerated() { d[i + 1] = url.absoluteString }
        return d
    }

    func configuration(_ tweak: (inout MultipartFetchConfiguration) -> Void = { _ in }) -> MultipartFetchConfiguration {
        var c = MultipartFetchConfiguration(datacenters: datacenters)
        c.retry.baseDelay = 0.01
        c.retry.maxDelay = 0.2
        tweak(&c)
        return c
    }

    func fetcher(revalidator: (any ReferenceRevalidator)? = nil, _ tweak: (inout MultipartFetchConfiguration) -> Void = { _ in }) -> MultipartFetch {
        MultipartFetch(transport: transport, configuration: configuration(tweak), revalidator: revalidator)
    }

    func mediaBox(_ name: String = "media", fetcher: (any MediaResourceFetcher)?) throws -> MediaBox {
        try MediaBox(basePath: directory.file(name), fetcher: fetcher)
    }

    /// A JSON API call at DC 1.
    func api<Req: Encodable, Res: Decodable>(_ method: CloudMethod, _ body: Req, as: Res.Type) async throws -> Res {
        let data = try JSONEncoder().encode(body)
        let r = try await transport.send(
            HTTPRequest(
                url: server.dcURLs[0].absoluteString + method.path, method: .post,
                headers: [HTTPHeader("Content-Type", "application/json")], body: .data(data)))
        guard r.status == 200 else { throw CloudError(code: r.status, name: .other("HTTP_\(r.status)")) }
        return try JSONDecoder().decode(Res.self, from: r.body)
    }

    func dialogs() async throws -> [Dialog] {
        try await api(.getDialogs, GetDialogsRequest(), as: GetDialogsResponse.self).dialogs
    }

    func history(_ peerId: Int64) async throws -> [CloudProtocol.Message] {
        try await api(.getHistory, GetHistoryRequest(peerId: peerId), as: MessagesResponse.self).messages
    }

    /// Every message of every peer.
    func allMessages() async throws -> [CloudProtocol.Message] {
        var out: [CloudProtocol.Message] = []
        for d in try await dialogs() { out += try await history(d.peer.id) }
        return out
    }

    /// Documents of the bench channel (one per message), largest first.
    func benchDocuments() async throws -> [Document] {
        guard let peer = server.dataset().benchPeerId else { return [] }
        var docs: [Document] = []
        var offsetId: Int32 = 0
        while true {
            let page = try await api(.getHistory, GetHistoryRequest(peerId: peer, offsetId: offsetId), as: MessagesResponse.self).messages
            docs += page.compactMap { $0.media.first?.document }
            guard let last = page.last, page.count == 100 else { break }
            offsetId = last.id
        }
        return docs.sorted { $0.size > $1.size }
    }

    /// The server's SHA-256 of a file as stored (plaintext for secret files).
    func expectedSHA(_ fileId: Int64) throws -> String {
        let info = try XCTUnwrap(try server.fileInfo(id: fileId))
        return info.plaintextSHA256 ?? info.sha256
    }

    /// Fetches `resource` into `box` and checks the complete file against the server's hash.
    @discardableResult
    func fetchAndCheck(
        _ box: MediaBox, _ resource: any CloudFetchableResource, fileId: Int64,
        file: StaticString = #filePath, line: UInt = #line
    ) async throws -> MediaResourceData {
        let data = try await box.fetch(resource, info: MediaResourceStorageInfo())
        XCTAssertTrue(data.complete, file: file, line: line)
        XCTAssertEqual(try SHA256.hash(contentsOfFile: data.path).hexString, try expectedSHA(fileId), "\(resource.id)", file: file, line: line)
        if let size = resource.size { XCTAssertEqual(data.size, size, file: file, line: line) }
        return data
    }

    /// Lets the parts an interrupted download had in flight finish being cancelled (the server
    /// counts a part when it answers), so counters reset afterwards see only the next download.
    static func settle() async throws { try await Task.sleep(for: .milliseconds(500)) }

    /// The ranges a partial download holds now (from its range record).
    static func storedRanges(_ box: MediaBox, _ id: MediaResourceId) -> [Range<Int64>] {
        MediaBoxPartialFile.record(of: box.paths(for: id), in: box.directory)?.ranges ?? []
    }
}

/// Passes through an inner fetcher's events and fails after `parts` data parts: a download
/// interrupted midway (the partial file keeps what was written). Parts may come in any order,
/// so `passedBytes` tells how many bytes the parts let through hold.
struct InterruptingFetcher: MediaResourceFetcher {
    struct Interrupted: Error {}
    let inner: any MediaResourceFetcher
    let parts: Int
    private let passed = Tally()

    init(inner: any MediaResourceFetcher, parts: Int) {
        self.inner = inner
        self.parts = parts
    }

    /// Bytes of the data events let through before the interruption.
    var passedBytes: Int64 { passed.bytes.withLock { $0 } }

    private final class Tally: Sendable {
        let bytes = Mutex<Int64>(0)
    }

    private final class State: @unchecked Sendable {
        // @unchecked Sendable: used by one consumer at a time (MediaBox's fetch loop).
        var iterator: AsyncThrowingStream<MediaResourceFetchEvent, any Error>.AsyncIterator
        var seen = 0
        init(_ s: AsyncThrowingStream<MediaResourceFetchEvent, any Error>) { iterator = s.makeAsyncIterator() }
    }

    func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> {
        let state = State(inner.fetch(request))
        let limit = parts
        let passed = self.passed
        return AsyncThrowingStream(unfolding: {
            if state.seen >= limit { throw Interrupted() }
            guard let e = try await state.iterator.next() else { return nil }
            if e.deliveredBytes > 0 {
                state.seen += 1
                passed.bytes.withLock { $0 += Int64(e.deliveredBytes) }
            }
            return e
        })
    }
}

/// A revalidator that re-fetches the parent message with `messages.getMessages` and counts calls.
final class MessageRevalidator: ReferenceRevalidator, @unchecked Sendable {
    let fixture: FetchFixture
    private let lock = NSLock()
    private var _calls = 0
    var calls: Int { lock.withLock { _calls } }

    init(_ fixture: FetchFixture) { self.fixture = fixture }

    func revalidate(resourceId: MediaResourceId, location: FileLocation, parent: MediaResourceReference) async throws -> FileReference {
        lock.withLock { _calls += 1 }
        guard case .message(let id) = parent else { throw MultipartFetchError.fileReferenceExpired(resourceId: resourceId, parent: parent) }
        let r = try await fixture.api(.getMessages, GetMessagesRequest(peerId: id.peerId.rawValue, ids: [id.id]), as: MessagesResponse.self)
        for m in r.messages {
            for media in m.media {
                if let d = media.document, d.location.id == location.id { return FileReference(d.fileReference) }
                if let p = media.photo, p.sizes.contains(where: { $0.location.id == location.id }) { return FileReference(p.fileReference) }
            }
        }
        throw MultipartFetchError.fileReferenceExpired(resourceId: resourceId, parent: parent)
    }
}

/// `XCTUnwrap` for values computed with `await` (its autoclosure cannot suspend).
func unwrap<T>(_ value: T?, file: StaticString = #filePath, line: UInt = #line) throws -> T {
    try XCTUnwrap(value, file: file, line: line)
}
