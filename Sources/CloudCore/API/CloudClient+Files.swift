import CloudCrypto
import CloudProtocol
import Foundation

/// File calls: one checked part of a file from a DC or the CDN, and the CDN hash and reupload
/// calls (`docs/cloud-protocol.md` §3–4). MultipartFetch drives these; they retry transport
/// failures, follow `FILE_MIGRATE`, and re-fetch a part whose bytes do not match `X-Part-SHA256`.
extension CloudClient {
    /// `upload.getFile` for `[offset, offset + limit)` of `location`, starting at its DC.
    /// Checked: the part rules (before sending), the body length against `limit` and the file
    /// size, and `X-Part-SHA256`. A corrupt part is fetched again (up to the retry policy's
    /// attempts); a short or oversize part is a `badAnswer`.
    public func getFilePart(
        location: FileLocation, fileReference: Data, offset: Int64, limit: Int64,
        dc: Int? = nil
    ) async throws -> FilePartAnswer {
        if let rule = FilePartRules.validate(offset: offset, limit: limit) {
            throw CloudClientError.invalidRequest("part offset \(offset) limit \(limit) breaks the part rules (\(rule.rawValue))")
        }
        let body = try CloudJSON.encoder.encode(GetFileRequest(location: location, fileReference: fileReference, offset: offset, limit: limit))
        var corrupt = 0
        while true {
            let answer = try await send(
                .getFile, to: .dc(dc ?? location.dcId), body: .data(body),
                destination: .collect(maxSize: Int(limit) + (64 << 10)))
            if answer.response.header(CloudHeader.result) == "cdnRedirect" {
                let redirect = try decode(GetFileRedirect.self, from: answer, method: .getFile).cdnRedirect
                noteCdnURL(redirect.cdnURL)
                return .cdnRedirect(redirect)
            }
            switch try checkPart(answer, method: .getFile, offset: offset, limit: limit) {
            case .ok(let size):
                return .part(data: answer.response.body, fileSize: size, dc: answer.dc ?? location.dcId)
            case .corrupt:
                corrupt += 1
                if corrupt >= config.retry.maxAttempts {
                    throw CloudClientError.badAnswer(
                        method: CloudMethod.getFile.rawValue, dc: answer.endpoint.description,
                        reason: "part at \(offset) failed its SHA-256 check \(corrupt) times")
                }
            }
        }
    }

    /// `upload.getCdnFile` at the CDN (`endpoint`: `.cdn` or the redirect's `.baseURL`): the
    /// **encrypted** bytes of `[offset, offset + limit)`, length- and hash-checked like
    /// `getFilePart`. `FILE_REUPLOAD_NEEDED` comes back as `CloudClientError.server`.
    public func getCdnFilePart(fileToken: Data, offset: Int64, limit: Int64, endpoint: CloudEndpoint = .cdn) async throws -> (data: Data, fileSize: Int64) {
        if let rule = FilePartRules.validate(offset: offset, limit: limit) {
            throw CloudClientError.invalidRequest("part offset \(offset) limit \(limit) breaks the part rules (\(rule.rawValue))")
        }
        let body = try CloudJSON.encoder.encode(GetCdnFileRequest(fileToken: fileToken, offset: offset, limit: limit))
        var corrupt = 0
        while true {
            let answer = try await send(
                .getCdnFile, to: endpoint, body: .data(body), destination: .collect(maxSize: Int(limit) + (64 << 10)),
                followMigrations: false)
            switch try checkPart(answer, method: .getCdnFile, offset: offset, limit: limit) {
            case .ok(let size): return (answer.response.body, size)
            case .corrupt:
                corrupt += 1
                if corrupt >= config.retry.maxAttempts {
                    throw CloudClientError.badAnswer(
                        method: CloudMethod.getCdnFile.rawValue, dc: answer.endpoint.description,
                        reason: "CDN part at \(offset) failed its SHA-256 check \(corrupt) times")
                }
            }
        }
    }

    /// `upload.getCdnFileHashes` at the master DC: hashes of up to 64 blocks of 128 KiB from the
    /// block containing `offset`.
    public func getCdnFileHashes(fileToken: Data, offset: Int64, masterDc: Int) async throws -> [CdnFileHash] {
        let r: CdnFileHashesResponse = try await call(.getCdnFileHashes, dc: masterDc, body: GetCdnFileHashesRequest(fileToken: fileToken, offset: offset))
        try checkHashes(r.hashes, method: .getCdnFileHashes)
        return r.hashes
    }

    /// `upload.reuploadCdnFile` at the master DC after `FILE_REUPLOAD_NEEDED`: hashes from 0.
    public func reuploadCdnFile(fileToken: Data, masterDc: Int) async throws -> [CdnFileHash] {
        let r: CdnFileHashesResponse = try await call(.reuploadCdnFile, dc: masterDc, body: ReuploadCdnFileRequest(fileToken: fileToken))
        try checkHashes(r.hashes, method: .reuploadCdnFile)
        return r.hashes
    }

    private enum PartCheck { case ok(Int64), corrupt }

    private func checkPart(_ answer: CloudAnswer, method: CloudMethod, offset: Int64, limit: Int64) throws -> PartCheck {
        let r = answer.response
        let bad = { (reason: String) in CloudClientError.badAnswer(method: method.rawValue, dc: answer.endpoint.description, reason: reason) }
        guard let sizeText = r.header(CloudHeader.fileSize), let size = Int64(sizeText.trimmingCharacters(in: .whitespaces)), size >= 0 else {
            throw bad("part answer without a valid \(CloudHeader.fileSize) header")
        }
        let count = Int64(r.body.count)
        if count > limit { throw bad("part at \(offset) has \(count) bytes, more than the limit \(limit)") }
        let expected = max(0, min(limit, size - offset))
        if count != expected { throw bad("part at \(offset) has \(count) bytes, expected \(expected) of a \(size)-byte file") }
        if let hex = r.header(CloudHeader.partSHA256) {
            guard let want = Data(hexString: hex.trimmingCharacters(in: .whitespaces)) else { throw bad("unreadable \(CloudHeader.partSHA256)") }
            if SHA256.hash(r.body) != want { return .corrupt }
        }
        return .ok(size)
    }

    private func checkHashes(_ hashes: [CdnFileHash], method: CloudMethod) throws {
        for h in hashes where h.hash.count != 32 || h.offset < 0 || h.limit <= 0 || h.offset % FilePartRules.cdnHashBlockSize != 0 {
            throw CloudClientError.badAnswer(method: method.rawValue, dc: "master DC", reason: "malformed CDN hash at offset \(h.offset)")
        }
    }
}
