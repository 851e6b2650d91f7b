import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An HTTP answer as the tests see it.
struct HTTPResult {
    var status: Int
    /// Lowercased header names.
    var headers: [String: String]
    var body: Data

    func decode<T: Decodable>(_ type: T.Type, file: StaticString = #filePath, line: UInt = #line) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: body)
        } catch {
            XCTFail("status \(status), cannot decode \(T.self) from \(String(decoding: body.prefix(500), as: UTF8.self))", file: file, line: line)
            throw error
        }
    }

    /// The error name if the body is an error envelope.
    var errorName: CloudErrorName? {
        (try? JSONDecoder().decode(CloudErrorEnvelope.self, from: body))?.error.name ?? headers["x-cloud-error"].map(CloudErrorName.init(parsing:))
    }
}

/// Real HTTP over loopback with URLSession.
enum TestHTTP {
    static let session: URLSession = {
        let c = URLSessionConfiguration.ephemeral
        c.timeoutIntervalForRequest = 30
        c.urlCache = nil
        return URLSession(configuration: c)
    }()

    static func request(_ url: URL, method: String = "GET", body: Data? = nil, headers: [String: String] = [:]) async throws -> HTTPResult {
        var r = URLRequest(url: url)
        r.httpMethod = method
        r.httpBody = body
        for (k, v) in headers { r.setValue(v, forHTTPHeaderField: k) }
        if body != nil, headers["Content-Type"] == nil { r.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        let (data, response) = try await session.data(for: r)
        let http = response as! HTTPURLResponse
        var h: [String: String] = [:]
        for (k, v) in http.allHeaderFields { h[String(describing: k).lowercased()] = String(describing: v) }
        return HTTPResult(status: http.statusCode, headers: h, body: data)
    }

    static func api<Req: Encodable>(_ base: URL, _ method: CloudMethod, _ body: Req) async throws -> HTTPResult {
        try await request(base.appendingPathComponent("api/\(method.rawValue)"), method: "POST", body: try JSONEncoder().encode(body))
    }

    static func adminGet<T: Decodable>(_ server: CloudServer, _ path: String, as: T.Type) async throws -> T {
        try await request(server.adminURL.appendingPathComponent("admin/" + path)).decode(T.self)
    }

    @discardableResult
    static func adminPost<Req: Encodable>(_ server: CloudServer, _ path: String, _ body: Req) async throws -> HTTPResult {
        let r = try await request(server.adminURL.appendingPathComponent("admin/" + path), method: "POST", body: try JSONEncoder().encode(body))
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        return r
    }
}

struct Empty: Codable {}

/// Small, fast servers for the tests, and a minimal protocol client that downloads a whole
/// file through migration, CDN redirect (decrypt + hash checks) and reupload.
enum TestCloud {
    static func start(_ configure: (inout CloudServerConfig) -> Void = { _ in }) async throws -> CloudServer {
        var c = CloudServerConfig()
        c.seed = 42
        c.dcCount = 3
        c.dataset.peers = 5
        c.dataset.messagesPerPeer = 16
        c.dataset.maxMediaSize = 3 << 20
        configure(&c)
        return try await CloudServer.start(c)
    }

    struct Download {
        var data: Data
        var migrations = 0
        var cdnParts = 0
        var reuploads = 0
    }

    /// Downloads every byte of a file at `location` with `reference`, starting at DC 1.
    static func download(
        _ server: CloudServer, location: FileLocation, reference: Data, size: Int64,
        partSize: Int64? = nil
    ) async throws -> Download {
        var result = Download(data: Data())
        var dc = 1
        let part = partSize ?? FilePartRules.preferredPartSize(fileSize: size)
        var offset: Int64 = 0
        var redirect: CdnRedirect?
        var hashes: [Int64: Data] = [:]
        while offset < size {
            if let rd = redirect {
                let r = try await TestHTTP.api(URL(string: rd.cdnURL)!, .getCdnFile, GetCdnFileRequest(fileToken: rd.fileToken, offset: offset, limit: part))
                if r.errorName == .fileReuploadNeeded {
                    let master = server.dcURLs[rd.masterDcId - 1]
                    let h = try await TestHTTP.api(master, .reuploadCdnFile, ReuploadCdnFileRequest(fileToken: rd.fileToken)).decode(CdnFileHashesResponse.self)
                    for x in h.hashes { hashes[x.offset] = x.hash }
                    result.reuploads += 1
                    continue
                }
                XCTAssertEqual(r.status, 200, "\(String(decoding: r.body.prefix(300), as: UTF8.self))")
                guard r.status == 200 else { throw CloudError(.internalError) }
                let plain = try AESCTR.crypt(r.body, key: rd.encryptionKey, iv: rd.encryptionIv, offset: offset)
                // Verify each 128 KiB block covered by this part.
                var blockOff = offset
                while blockOff < offset + Int64(plain.count) {
                    if hashes[blockOff] == nil {
                        let master = server.dcURLs[rd.masterDcId - 1]
                        let h = try await TestHTTP.api(master, .getCdnFileHashes, GetCdnFileHashesRequest(fileToken: rd.fileToken, offset: blockOff)).decode(
                            CdnFileHashesResponse.self)
                        for x in h.hashes { hashes[x.offset] = x.hash }
                    }
                    let start = Int(blockOff - offset)
                    let end = min(plain.count, start + Int(FilePartRules.cdnHashBlockSize))
                    XCTAssertEqual(SHA256.hash(plain[plain.startIndex + start..<plain.startIndex + end]), hashes[blockOff], "CDN block \(blockOff)")
                    blockOff += FilePartRules.cdnHashBlockSize
                }
                result.data.append(plain)
                result.cdnParts += 1
                offset += Int64(plain.count)
                if plain.isEmpty { break }
                continue
            }
            let r = try await TestHTTP.api(
                server.dcURLs[dc - 1], .getFile, GetFileRequest(location: location, fileReference: reference, offset: offset, limit: part))
            if case .fileMigrate(let n) = r.errorName {
                dc = n
                result.migrations += 1
                continue
            }
            XCTAssertEqual(r.status, 200, "\(String(decoding: r.body.prefix(300), as: UTF8.self))")
            guard r.status == 200 else { throw CloudError(r.errorName ?? .internalError) }
            if r.headers["x-cloud-result"] == "cdnRedirect" {
                let rd = try r.decode(GetFileRedirect.self).cdnRedirect
                for x in rd.fileHashes { hashes[x.offset] = x.hash }
                redirect = rd
                continue
            }
            XCTAssertEqual(r.headers["x-part-sha256"], SHA256.hash(r.body).hexString)
            result.data.append(r.body)
            offset += Int64(r.body.count)
            if r.body.isEmpty { break }
        }
        return result
    }

    static func fileInfo(_ server: CloudServer, _ id: Int64) async throws -> FileInfo {
        try await TestHTTP.adminGet(server, "files/\(id)", as: FileInfo.self)
    }
}
