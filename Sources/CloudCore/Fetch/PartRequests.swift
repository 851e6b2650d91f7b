import CloudCrypto
import CloudProtocol
import Foundation
import MediaBox

/// The HTTP side of one part: builds the request, sends it through the transport and checks the
/// answer (length, `X-File-Size`, `X-Part-SHA256`). Bytes that fail a check are dropped here and
/// never reach MediaBox.
struct PartRequests: Sendable {
    let transport: any Transport
    let configuration: MultipartFetchConfiguration
    let resourceId: MediaResourceId

    /// Largest JSON answer (redirect, hashes) accepted.
    static let maxJSONAnswer = 1 << 20

    private func headers(json: Bool) -> [HTTPHeader] {
        var h: [HTTPHeader] = []
        if json { h.append(HTTPHeader("Content-Type", "application/json")) }
        if let token = configuration.authToken { h.append(HTTPHeader("Authorization", "Bearer \(token)")) }
        return h
    }

    private func post<Body: Encodable>(
        _ url: String, _ body: Body, maxSize: Int, hashBody: Bool = false, into sink: PartFileSink? = nil, urgent: Bool = false
    ) async throws -> HTTPResponse {
        let data = try JSONEncoder().encode(body)
        var request = HTTPRequest(
            url: url, method: .post, headers: headers(json: true), body: .data(data),
            destination: sink?.destination(maxLength: Int64(maxSize)) ?? .collect(maxSize: maxSize), timeout: configuration.requestTimeout)
        request.hashBody = hashBody
        request.urgent = urgent
        // A redirect (JSON) is read here, never written into the file.
        if sink != nil { request.collectWhen = HTTPHeader(CloudHeader.result, "cdnRedirect") }
        return try await transport.send(request)
    }

    /// Checks a raw part answer against the part asked for; the verified part or a retry. With a
    /// sink the bytes are already in the partial file or in its part buffer: the part then
    /// reports them as written (once `getFile` has committed a buffer), and only a part that
    /// passes every check is ever reported.
    private func verifiedPart(_ response: HTTPResponse, _ part: PartSpec, sink: PartFileSink? = nil) -> PartOutcome {
        guard let sizeText = response.header(CloudHeader.fileSize), let size = Int64(sizeText), size >= 0 else {
            return .retry(reason: "part answer without a valid \(CloudHeader.fileSize)", badAnswer: true)
        }
        let expected = max(0, min(part.offset + part.limit, size) - part.offset)
        let received = sink?.received ?? Int64(response.body.count)
        guard received == expected else {
            return .retry(reason: "part of \(received) bytes, expected \(expected)", badAnswer: true)
        }
        guard let hex = response.header(CloudHeader.partSHA256) else {
            return .retry(reason: "part answer without \(CloudHeader.partSHA256)", badAnswer: true)
        }
        // Hashed by the transport as the bytes arrived (any other transport: hashed here; a
        // transport that does not hash cannot verify a part it streamed).
        guard let digest = response.bodySHA256 ?? (sink == nil ? SHA256.hash(response.body) : nil),
            let expectedDigest = Data(hexString: hex), digest == expectedDigest
        else {
            return .retry(reason: "part checksum mismatch (corrupt part)", badAnswer: true)
        }
        var verified = sink != nil ? PartData(written: received, fileSize: size) : PartData(data: response.body, fileSize: size)
        verified.headerRevision = response.header(CloudHeader.headerRevision).flatMap { Int64($0) }
        return .data(verified)
    }

    /// `upload.getFile` at a DC. With `writer`, the part's bytes go straight into the partial
    /// file (see `PartFileSink`).
    func getFile(
        baseURL: String, location: FileLocation, reference: FileReference, part: PartSpec, writer: MediaResourcePartWriter? = nil
    ) async throws -> PartOutcome {
        let request = GetFileRequest(location: location, fileReference: reference.bytes, offset: part.offset, limit: part.limit)
        let sink = writer.map { PartFileSink(writer: $0, part: part) }
        let response = try await post(
            baseURL + CloudMethod.getFile.path, request,
            maxSize: max(Int(part.limit), Self.maxJSONAnswer), hashBody: true, into: sink, urgent: part.urgent)
        guard response.status == 200 else {
            if ErrorAnswer.name(response) == .fileReferenceExpired { return .referenceExpired(reference) }
            return ErrorAnswer.outcome(response, resourceId: resourceId)
        }
        if response.header(CloudHeader.result) == "cdnRedirect" {
            guard let r = try? JSONDecoder().decode(GetFileRedirect.self, from: response.body) else {
                return .retry(reason: "CDN redirect that is not valid JSON", badAnswer: true)
            }
            guard r.cdnRedirect.encryptionKey.count == 32, r.cdnRedirect.encryptionIv.count == 16 else {
                return .retry(reason: "CDN redirect with a malformed key or IV", badAnswer: true)
            }
            return .redirect(r.cdnRedirect)
        }
        let outcome = verifiedPart(response, part, sink: sink)
        if let sink, case .data = outcome { try await sink.commit() }
        return outcome
    }

    /// `upload.getCdnFile`: the encrypted part, decrypted (AES-256-CTR, counter = offset/16) and
    /// checked block by block against the master DC's SHA-256 hashes.
    func getCdnFile(
        session: CdnSession, part: PartSpec, generation: Int,
        hashes: @Sendable (Range<Int64>) async throws -> [Int64: Data]
    ) async throws -> PartOutcome {
        let response = try await post(
            session.baseURL + CloudMethod.getCdnFile.path,
            GetCdnFileRequest(fileToken: session.redirect.fileToken, offset: part.offset, limit: part.limit),
            maxSize: max(Int(part.limit), 64 << 10), hashBody: true, urgent: part.urgent)
        guard response.status == 200 else {
            switch ErrorAnswer.name(response) {
            case .fileReuploadNeeded: return .reuploadNeeded(generation: generation)
            case .fileTokenInvalid: return .tokenInvalid
            default: return ErrorAnswer.outcome(response, resourceId: resourceId)
            }
        }
        let checked = verifiedPart(response, part)
        guard case .data(let cipher) = checked else { return checked }
        guard cipher.fileSize == session.redirect.size else {
            return .retry(reason: "CDN size \(cipher.fileSize) differs from the redirect's \(session.redirect.size)", badAnswer: true)
        }
        let plain = try AESCTR.crypt(cipher.data, key: session.redirect.encryptionKey, iv: session.redirect.encryptionIv, offset: part.offset)
        let range = part.offset..<(part.offset + Int64(plain.count))
        guard !range.isEmpty else { return .data(PartData(data: plain, fileSize: cipher.fileSize)) }
        let known = try await hashes(range)
        let block = FilePartRules.cdnHashBlockSize
        var o = range.lowerBound
        guard o % block == 0 else { return .fatal(.badAnswer(resourceId: resourceId, offset: part.offset, reason: "CDN part not aligned to hash blocks")) }
        while o < range.upperBound {
            let end = min(o + block, range.upperBound)
            guard let expected = known[o] else {
                return .retry(reason: "no CDN hash for the block at \(o)", badAnswer: true)
            }
            let digest = plain.withUnsafeBytes { SHA256.hash(bytes: UnsafeRawBufferPointer(rebasing: $0[Int(o - part.offset)..<Int(end - part.offset)])) }
            guard digest == expected else {
                return .retry(reason: "CDN block at \(o) failed its SHA-256 (corrupt part)", badAnswer: true)
            }
            o = end
        }
        var verified = PartData(data: plain, fileSize: cipher.fileSize)
        verified.headerRevision = cipher.headerRevision
        return .data(verified)
    }

    /// A JSON call at a DC returning hashes (`getCdnFileHashes`, `reuploadCdnFile`), retried
    /// like parts.
    func hashesCall<Body: Encodable & Sendable>(baseURL: String, method: CloudMethod, body: Body) async throws -> [CdnFileHash] {
        var failures = 0
        var floods = 0
        while true {
            try Task.checkCancellation()
            let outcome: PartOutcome
            var hashes: [CdnFileHash] = []
            do {
                let response = try await post(baseURL + method.path, body, maxSize: Self.maxJSONAnswer)
                if response.status == 200 {
                    if let r = try? JSONDecoder().decode(CdnFileHashesResponse.self, from: response.body) {
                        hashes = r.hashes
                        outcome = .data(PartData(data: Data(), fileSize: 0))
                    } else {
                        outcome = .retry(reason: "\(method.rawValue) answer is not valid JSON", badAnswer: true)
                    }
                } else {
                    outcome = ErrorAnswer.outcome(response, resourceId: resourceId)
                }
            } catch let e as TransportError {
                guard TransportErrorText.isRetryable(e) else {
                    throw MultipartFetchError.transport(resourceId: resourceId, reason: TransportErrorText.describe(e))
                }
                outcome = .retry(reason: TransportErrorText.describe(e), badAnswer: TransportErrorText.isBadAnswer(e))
            }
            switch outcome {
            case .data: return hashes
            case .retry(let reason, let bad):
                failures += 1
                if failures >= configuration.retry.maxAttempts {
                    if bad { throw MultipartFetchError.badAnswer(resourceId: resourceId, offset: 0, reason: "\(method.rawValue): \(reason)") }
                    throw MultipartFetchError.unavailable(resourceId: resourceId, offset: 0, attempts: failures, reason: "\(method.rawValue): \(reason)")
                }
                try await Task.sleep(for: .seconds(configuration.retry.delay(beforeRetry: failures)))
            case .floodWait(let s):
                floods += 1
                guard Double(s) <= configuration.retry.maxFloodWait, floods <= configuration.retry.maxFloodWaits else {
                    throw MultipartFetchError.server(resourceId: resourceId, name: .floodWait(s), status: 420)
                }
                try await Task.sleep(for: .seconds(s))
            case .fatal(let e): throw e
            default:
                throw MultipartFetchError.badAnswer(resourceId: resourceId, offset: 0, reason: "unexpected answer to \(method.rawValue)")
            }
        }
    }

    /// A range of a plain URL: 206 with a matching `Content-Range` (or 200 for a whole file that
    /// fits the part), the body exactly as long as the range.
    func plainGet(url: String, part: PartSpec) async throws -> PartOutcome {
        let h: [HTTPHeader] = []
        let response: HTTPResponse
        do {
            var request = HTTPRequest(
                url: url, headers: h, range: HTTPRange(offset: part.offset, length: part.limit),
                destination: .collect(maxSize: Int(part.limit)), timeout: configuration.requestTimeout)
            request.urgent = part.urgent
            response = try await transport.send(request)
        } catch TransportError.tooLarge(let limit, let received) where part.offset == 0 {
            // A 200 for the whole file when a range was asked: the server has no Range support.
            return .fatal(.badAnswer(resourceId: resourceId, offset: 0, reason: "server ignored the range (\(received) bytes for a \(limit)-byte part)"))
        }
        switch response.status {
        case 206:
            guard let cr = response.contentRange, cr.first == part.offset, let total = cr.total else {
                return .retry(reason: "206 without a matching Content-Range", badAnswer: true)
            }
            let expectedLast = min(part.offset + part.limit, total) - 1
            guard cr.last == expectedLast, Int64(response.body.count) == cr.last - cr.first + 1 else {
                return .retry(reason: "range answer of \(response.body.count) bytes, expected \(expectedLast - part.offset + 1)", badAnswer: true)
            }
            return .data(PartData(data: response.body, fileSize: total))
        case 200 where part.offset == 0:
            // No Range support, but the whole file fit into the part.
            if let lengthText = response.header("Content-Length"), let length = Int64(lengthText), length != Int64(response.body.count) {
                return .retry(reason: "body of \(response.body.count) bytes, Content-Length \(length)", badAnswer: true)
            }
            return .data(PartData(data: response.body, fileSize: Int64(response.body.count)))
        case 416:
            if let value = response.header("Content-Range"), value.hasPrefix("bytes */"), let total = Int64(value.dropFirst(8)) {
                return .data(PartData(data: Data(), fileSize: total))
            }
            return .retry(reason: "416 without a size", badAnswer: true)
        case 429, 500...599:
            if let s = response.header("Retry-After").flatMap({ Int($0) }), response.status == 429 || response.status == 503 { return .floodWait(s) }
            return .retry(reason: "HTTP \(response.status)", badAnswer: false)
        default:
            return .fatal(.server(resourceId: resourceId, name: .other("HTTP_\(response.status)"), status: response.status))
        }
    }
}
