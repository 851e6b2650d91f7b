import CloudProtocol
import Foundation

/// Upload part calls and the final `messages.sendMedia` (`docs/cloud-protocol.md` §7).
extension CloudClient {
    /// `upload.saveFilePart?fileId=&part=` with the part's bytes (small-file mode). Safe to retry:
    /// the server replaces a re-sent part.
    public func saveFilePart(fileId: Int64, part: Int, body: RequestBody, dc: Int? = nil) async throws {
        try checkPart(fileId: fileId, part: part, body: body)
        let answer = try await send(
            .saveFilePart, to: dc.map(CloudEndpoint.dc) ?? .main,
            query: [(UploadQuery.fileId, fileId), (UploadQuery.part, Int64(part))],
            body: body, contentType: "application/octet-stream")
        try checkOk(answer, .saveFilePart)
    }

    /// `upload.saveBigFilePart?fileId=&part=&totalParts=` (big-file mode, files over 10 MiB).
    public func saveBigFilePart(fileId: Int64, part: Int, totalParts: Int, body: RequestBody, dc: Int? = nil) async throws {
        try checkPart(fileId: fileId, part: part, body: body)
        guard totalParts > part, totalParts <= 8000 else {
            throw CloudClientError.invalidRequest("part \(part) of \(totalParts): totalParts must exceed the part number and be ≤ 8000")
        }
        let answer = try await send(
            .saveBigFilePart, to: dc.map(CloudEndpoint.dc) ?? .main,
            query: [
                (UploadQuery.fileId, fileId), (UploadQuery.part, Int64(part)),
                (UploadQuery.totalParts, Int64(totalParts)),
            ],
            body: body, contentType: "application/octet-stream")
        try checkOk(answer, .saveBigFilePart)
    }

    /// `messages.sendMedia`: attaches the uploaded file to a new message. Idempotent by
    /// `request.randomId`, so retrying after a lost answer never creates a second message.
    public func sendMedia(_ request: SendMediaRequest, dc: Int? = nil) async throws -> Message {
        guard request.randomId != 0 else { throw CloudClientError.invalidRequest("sendMedia needs a non-zero randomId") }
        let r: SendMediaResponse = try await call(.sendMedia, dc: dc, body: request)
        let m = r.message
        if m.peerId != request.peerId || (m.randomId != nil && m.randomId != request.randomId) || m.media.count != 1 {
            throw CloudClientError.badAnswer(
                method: CloudMethod.sendMedia.rawValue, dc: dc.map { "DC \($0)" } ?? "main DC",
                reason: "the message does not match the request (peer \(m.peerId), \(m.media.count) media)")
        }
        return m
    }

    private func checkPart(fileId: Int64, part: Int, body: RequestBody) throws {
        guard fileId != 0 else { throw CloudClientError.invalidRequest("upload fileId must be non-zero") }
        guard part >= 0, part < 8000 else { throw CloudClientError.invalidRequest("upload part \(part) out of 0…7999") }
        if case .none = body { throw CloudClientError.invalidRequest("upload part \(part) is empty") }
    }

    private func checkOk(_ answer: CloudAnswer, _ method: CloudMethod) throws {
        let ok = try decode(OkResponse.self, from: answer, method: method)
        guard ok.ok else {
            throw CloudClientError.badAnswer(method: method.rawValue, dc: answer.endpoint.description, reason: "answered ok: false")
        }
    }
}
