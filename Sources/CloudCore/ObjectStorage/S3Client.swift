import CloudCrypto
import Foundation

/// An S3 API client over the shared libcurl ``Transport``: libcurl signs every request with
/// SigV4; this type builds the requests, reads the XML answers and retries what may succeed on
/// a second try (transport failures, 5xx, `SlowDown`) with the cloud client's
/// ``CloudRetryPolicy``.
///
/// ```swift
/// let s3 = S3Client(transport: transport, bucket: S3Bucket(endpoint: "http://127.0.0.1:9000",
///                   name: "media"), credentials: credentials)
/// try await s3.putObject("a/b", body: .data(bytes))
/// let head = try await s3.headObject("a/b")
/// ```
///
/// Payload hashes: a body whose SHA-256 the caller knows is sent with it as
/// `x-amz-content-sha256`, so the service rejects bytes altered on the way; other bodies are
/// sent as `UNSIGNED-PAYLOAD`. ETags are kept only to name parts in CompleteMultipartUpload —
/// jobrun never treats them as checksums.
public struct S3Client: Sendable {
    public let transport: any Transport
    public let bucket: S3Bucket
    private let credentials: S3Credentials
    public var retryPolicy: CloudRetryPolicy
    /// Total time for one request carrying or returning at most a part; `nil`: the transport's.
    public var requestTimeout: Double?

    public init(
        transport: any Transport, bucket: S3Bucket, credentials: S3Credentials,
        retryPolicy: CloudRetryPolicy = CloudRetryPolicy(), requestTimeout: Double? = nil
    ) {
        self.transport = transport
        self.bucket = bucket
        self.credentials = credentials
        self.retryPolicy = retryPolicy
        self.requestTimeout = requestTimeout
    }

    static let unsignedPayload = "UNSIGNED-PAYLOAD"
    static let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    // MARK: objects

    /// Stores `body` under `key`. `sha256` (of the body) lets the service verify the bytes.
    public func putObject(
        _ key: String, body: RequestBody, sha256: Data? = nil, metadata: [String: String] = [:],
        contentType: String = "application/octet-stream"
    ) async throws {
        var headers = [HTTPHeader("Content-Type", contentType)]
        if let sha256 { headers += Self.checksumHeaders(sha256) }
        for (name, value) in metadata.sorted(by: { $0.key < $1.key }) {
            headers.append(HTTPHeader("x-amz-meta-\(name.lowercased())", value))
        }
        _ = try await perform(
            "PutObject", key: key, method: .put, headers: headers, body: body, payloadSHA256: sha256)
    }

    /// Fetches `key` (or a range of it) into `destination`. A missing key throws `NoSuchKey`.
    public func getObject(
        _ key: String, range: HTTPRange? = nil, to destination: ResponseDestination = .collect,
        hashBody: Bool = false
    ) async throws -> HTTPResponse {
        try await perform(
            "GetObject", key: key, method: .get, range: range, destination: destination, hashBody: hashBody)
    }

    /// Size, ETag and metadata of `key`; `nil` when there is no such object.
    public func headObject(_ key: String) async throws -> S3ObjectInfo? {
        do {
            let r = try await perform("HeadObject", key: key, method: .head, headers: [HTTPHeader("x-amz-checksum-mode", "ENABLED")])
            var metadata: [String: String] = [:]
            for h in r.headers where h.name.lowercased().hasPrefix("x-amz-meta-") {
                metadata[String(h.name.lowercased().dropFirst(11))] = h.value
            }
            return S3ObjectInfo(
                key: key, size: Int64(r.header("Content-Length") ?? "") ?? 0,
                eTag: r.header("ETag") ?? "", metadata: metadata, sha256Checksum: r.header("x-amz-checksum-sha256"))
        } catch let error as S3Error where error.status == 404 {
            return nil
        }
    }

    /// Removes `key`. Removing a missing key succeeds (S3's own rule), so a retried delete is safe.
    public func deleteObject(_ key: String) async throws {
        _ = try await perform("DeleteObject", key: key, method: .delete)
    }

    /// One page of keys under `prefix` (ListObjectsV2), at most `maxKeys` (the service caps it at
    /// 1000).
    public func listObjects(prefix: String = "", continuationToken: String? = nil, maxKeys: Int? = nil) async throws
        -> S3ObjectPage
    {
        var query = [("list-type", "2")]
        if !prefix.isEmpty { query.append(("prefix", prefix)) }
        if let continuationToken { query.append(("continuation-token", continuationToken)) }
        if let maxKeys { query.append(("max-keys", String(maxKeys))) }
        let r = try await perform("ListObjectsV2", key: nil, method: .get, query: query)
        let root = try parse(r.body, "ListObjectsV2", key: nil)
        var objects: [S3ListedObject] = []
        for c in root.all("Contents") {
            guard let key = c.text("Key") else { throw malformed("ListObjectsV2", nil, "Contents without Key") }
            objects.append(
                S3ListedObject(
                    key: key, size: Int64(c.text("Size") ?? "") ?? 0, eTag: c.text("ETag") ?? "",
                    lastModified: c.text("LastModified") ?? ""))
        }
        let truncated = root.text("IsTruncated") == "true"
        let next = truncated ? root.text("NextContinuationToken") : nil
        if truncated && next == nil { throw malformed("ListObjectsV2", nil, "truncated page without NextContinuationToken") }
        return S3ObjectPage(objects: objects, nextContinuationToken: next)
    }

    /// Every key under `prefix`, following continuation tokens.
    public func listAllObjects(prefix: String = "", pageSize: Int? = nil) async throws -> [S3ListedObject] {
        var all: [S3ListedObject] = []
        var token: String? = nil
        repeat {
            let page = try await listObjects(prefix: prefix, continuationToken: token, maxKeys: pageSize)
            all += page.objects
            token = page.nextContinuationToken
        } while token != nil
        return all
    }

    // MARK: multipart uploads

    /// Starts a multipart upload of `key`; returns its upload id. With `sha256Checksums`, every part
    /// must then carry its SHA-256 (`uploadPart(…, checksum: true)`, `S3CompletedPart.sha256`)
    /// and the service keeps a checksum of them with the object.
    public func createMultipartUpload(
        _ key: String, contentType: String = "application/octet-stream", sha256Checksums: Bool = false
    ) async throws -> String {
        var headers = [HTTPHeader("Content-Type", contentType)]
        if sha256Checksums { headers.append(HTTPHeader("x-amz-checksum-algorithm", "SHA256")) }
        let r = try await perform(
            "CreateMultipartUpload", key: key, method: .post, query: [("uploads", "")], headers: headers)
        let root = try parse(r.body, "CreateMultipartUpload", key: key)
        guard let id = root.text("UploadId"), !id.isEmpty else {
            throw malformed("CreateMultipartUpload", key, "no UploadId")
        }
        return id
    }

    /// Sends part `partNumber` (1…10000); returns its ETag. `sha256` of the part lets the
    /// service verify it; with `checksum` (an upload created with `sha256Checksums`) it is also
    /// the part's checksum the service keeps.
    public func uploadPart(
        _ key: String, uploadId: String, partNumber: Int, body: RequestBody, sha256: Data? = nil, checksum: Bool = false
    ) async throws -> String {
        let headers = checksum ? sha256.map(Self.checksumHeaders) ?? [] : []
        let r = try await perform(
            "UploadPart \(partNumber)", key: key, method: .put,
            query: [("partNumber", String(partNumber)), ("uploadId", uploadId)], headers: headers, body: body, payloadSHA256: sha256)
        guard let eTag = r.header("ETag"), !eTag.isEmpty else {
            throw malformed("UploadPart \(partNumber)", key, "no ETag header")
        }
        return eTag
    }

    /// Joins the parts into the object.
    public func completeMultipartUpload(_ key: String, uploadId: String, parts: [S3CompletedPart]) async throws {
        var xml = "<CompleteMultipartUpload>"
        for p in parts.sorted(by: { $0.partNumber < $1.partNumber }) {
            let checksum = p.sha256.map { "<ChecksumSHA256>\($0.base64EncodedString())</ChecksumSHA256>" } ?? ""
            xml += "<Part><PartNumber>\(p.partNumber)</PartNumber><ETag>\(s3XMLEscaped(p.eTag))</ETag>\(checksum)</Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let body = Data(xml.utf8)
        let r = try await perform(
            "CompleteMultipartUpload", key: key, method: .post, query: [("uploadId", uploadId)],
            headers: [HTTPHeader("Content-Type", "application/xml")], body: .data(body),
            payloadSHA256: CloudCrypto.SHA256.hash(body))
        // S3 may answer 200 with an <Error> document when the join fails late.
        if !r.body.isEmpty, let root = try? S3XMLElement.parse(r.body), root.name == "Error" {
            throw S3Error(
                bucket: bucket.name, operation: "CompleteMultipartUpload", key: key,
                reason: .service(status: r.status, code: root.text("Code") ?? "Error", message: root.text("Message") ?? ""))
        }
    }

    /// The body's SHA-256 as its S3 checksum: the service checks the body against it and keeps
    /// it (`x-amz-sdk-checksum-algorithm` names the algorithm, as the AWS SDKs do).
    private static func checksumHeaders(_ sha256: Data) -> [HTTPHeader] {
        [HTTPHeader("x-amz-sdk-checksum-algorithm", "SHA256"), HTTPHeader("x-amz-checksum-sha256", sha256.base64EncodedString())]
    }

    /// Abandons the upload and frees its parts. Aborting an upload that is already gone
    /// (`NoSuchUpload`) succeeds.
    public func abortMultipartUpload(_ key: String, uploadId: String) async throws {
        do {
            _ = try await perform("AbortMultipartUpload", key: key, method: .delete, query: [("uploadId", uploadId)])
        } catch let error as S3Error where error.code == "NoSuchUpload" {
            return
        }
    }

    /// Every part the service holds for the upload, following `NextPartNumberMarker`.
    public func listParts(_ key: String, uploadId: String, pageSize: Int? = nil) async throws -> [S3UploadedPart] {
        var parts: [S3UploadedPart] = []
        var marker: String? = nil
        while true {
            var query = [("uploadId", uploadId)]
            if let marker { query.append(("part-number-marker", marker)) }
            if let pageSize { query.append(("max-parts", String(pageSize))) }
            let r = try await perform("ListParts", key: key, method: .get, query: query)
            let root = try parse(r.body, "ListParts", key: key)
            for p in root.all("Part") {
                guard let n = Int(p.text("PartNumber") ?? "") else { throw malformed("ListParts", key, "Part without PartNumber") }
                parts.append(S3UploadedPart(partNumber: n, size: Int64(p.text("Size") ?? "") ?? 0, eTag: p.text("ETag") ?? ""))
            }
            guard root.text("IsTruncated") == "true", let next = root.text("NextPartNumberMarker"), next != marker else { break }
            marker = next
        }
        return parts
    }

    /// Multipart uploads in progress under `prefix`, following the key and upload-id markers.
    public func listMultipartUploads(prefix: String = "") async throws -> [S3PendingUpload] {
        var uploads: [S3PendingUpload] = []
        var keyMarker: String? = nil
        var idMarker: String? = nil
        while true {
            var query = [("uploads", "")]
            if !prefix.isEmpty { query.append(("prefix", prefix)) }
            if let keyMarker { query.append(("key-marker", keyMarker)) }
            if let idMarker { query.append(("upload-id-marker", idMarker)) }
            let r = try await perform("ListMultipartUploads", key: nil, method: .get, query: query)
            let root = try parse(r.body, "ListMultipartUploads", key: nil)
            for u in root.all("Upload") {
                guard let key = u.text("Key"), let id = u.text("UploadId") else {
                    throw malformed("ListMultipartUploads", nil, "Upload without Key or UploadId")
                }
                uploads.append(S3PendingUpload(key: key, uploadId: id, initiated: u.text("Initiated") ?? ""))
            }
            guard root.text("IsTruncated") == "true", let nextKey = root.text("NextKeyMarker") else { break }
            let nextId = root.text("NextUploadIdMarker")
            if nextKey == keyMarker && nextId == idMarker { break }
            keyMarker = nextKey
            idMarker = nextId
        }
        return uploads
    }

    /// Creates the bucket (tests, benchmarks and first-time setup); an existing bucket owned by
    /// the same account is fine.
    public func createBucket() async throws {
        var body = Data()
        if bucket.region != "us-east-1" {
            body = Data(
                "<CreateBucketConfiguration><LocationConstraint>\(bucket.region)</LocationConstraint></CreateBucketConfiguration>".utf8)
        }
        do {
            _ = try await perform(
                "CreateBucket", key: nil, method: .put, body: body.isEmpty ? .none : .data(body),
                payloadSHA256: CloudCrypto.SHA256.hash(body))
        } catch let error as S3Error where error.code == "BucketAlreadyOwnedByYou" {
            return
        }
    }

    // MARK: plumbing

    /// Sends one signed request, retrying what the retry policy allows; a non-2xx answer throws
    /// ``S3Error`` with the service's code.
    func perform(
        _ operation: String, key: String?, method: HTTPMethod, query: [(String, String)] = [],
        headers: [HTTPHeader] = [], body: RequestBody = .none, payloadSHA256: Data? = nil,
        range: HTTPRange? = nil, destination: ResponseDestination = .collect, hashBody: Bool = false
    ) async throws -> HTTPResponse {
        var request = HTTPRequest(
            url: bucket.url(key: key, query: query), method: method, headers: headers, body: body, range: range,
            destination: destination, timeout: requestTimeout)
        request.hashBody = hashBody
        let payloadHash: String
        if let payloadSHA256 {
            payloadHash = payloadSHA256.hexString
        } else if case .none = body {
            payloadHash = Self.emptySHA256
        } else {
            payloadHash = Self.unsignedPayload
        }
        request.headers.append(HTTPHeader("x-amz-content-sha256", payloadHash))
        if let token = credentials.sessionToken { request.headers.append(HTTPHeader("x-amz-security-token", token)) }
        request.awsSigV4 = AWSSigV4Signing(
            region: bucket.region, service: "s3", accessKeyId: credentials.accessKeyId,
            secretAccessKey: credentials.secretAccessKey)

        var attempt = 1
        while true {
            let failure: S3Error
            do {
                let response = try await transport.send(request)
                if response.isSuccess { return response }
                failure = serviceError(response, operation, key)
            } catch let error as TransportError {
                failure = S3Error(bucket: bucket.name, operation: operation, key: key, reason: .transport(error))
            }
            guard failure.isRetryable, attempt < retryPolicy.maxAttempts else { throw failure }
            let delay = retryPolicy.delay(beforeRetry: attempt)
            attempt += 1
            try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
        }
    }

    private func serviceError(_ r: HTTPResponse, _ operation: String, _ key: String?) -> S3Error {
        var code = ""
        var message = ""
        if let root = try? S3XMLElement.parse(r.body), root.name == "Error" {
            code = root.text("Code") ?? ""
            message = root.text("Message") ?? ""
        }
        if code.isEmpty {
            // HEAD answers carry no body: name the status the way S3 documents it.
            switch r.status {
            case 301: code = "PermanentRedirect"
            case 400: code = "BadRequest"
            case 403: code = "AccessDenied"
            case 404: code = key == nil ? "NoSuchBucket" : "NoSuchKey"
            case 503: code = "SlowDown"
            default: code = "HTTP\(r.status)"
            }
        }
        return S3Error(
            bucket: bucket.name, operation: operation, key: key, reason: .service(status: r.status, code: code, message: message))
    }

    private func parse(_ body: Data, _ operation: String, key: String?) throws -> S3XMLElement {
        do {
            return try S3XMLElement.parse(body)
        } catch {
            throw malformed(operation, key, "\(error)")
        }
    }

    private func malformed(_ operation: String, _ key: String?, _ why: String) -> S3Error {
        S3Error(bucket: bucket.name, operation: operation, key: key, reason: .malformedAnswer(why))
    }
}
