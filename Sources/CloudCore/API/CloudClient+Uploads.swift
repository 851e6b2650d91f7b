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
        return try checkedMessage(r.message, request, dc: dc)
    }

    /// `m`, once it is the message `request` asked for.
    private func checkedMessage(_ m: Message, _ request: SendMediaRequest, dc: Int?) throws -> Message {
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

    /// Sends `upload.saveFilePart` (part 0 of a one-part file, small-file mode) and then
    /// `messages.sendMedia` in one container, one request in one round trip. The server runs
    /// them in order, so the part is stored before `sendMedia` looks for it. The container as a
    /// whole is retried as any call is (both calls are safe to repeat: a re-sent part replaces
    /// itself, the random id makes `sendMedia` idempotent).
    public func saveFileAndSendMedia(fileId: Int64, part: Data, send request: SendMediaRequest, dc: Int? = nil) async throws -> ContainedSendOutcome {
        guard fileId != 0, !part.isEmpty, part.count <= UploadPartRules.maxPartSize, request.file.id == fileId, request.file.parts == 1,
            !request.file.big, request.randomId != 0
        else {
            throw CloudClientError.invalidRequest("a contained upload is one part of 1 byte…512 KiB of a small file, sent with a random id")
        }
        let body: Data
        do {
            body = try CloudContainer.request([
                (.saveFilePart, [(UploadQuery.fileId, fileId), (UploadQuery.part, 0)], part),
                (.sendMedia, [], try CloudJSON.encoder.encode(request)),
            ])
        } catch {
            throw CloudClientError.config("cannot encode the container: \(error)")
        }
        let answer = try await send(
            .container, to: dc.map(CloudEndpoint.dc) ?? .main, body: .data(body), contentType: CloudContainer.contentType,
            destination: .collect(maxSize: config.maxAnswerSize))
        let answers: [(status: Int, body: Data)]
        do {
            answers = try CloudContainer.answers(of: answer.response.body)
        } catch {
            throw CloudClientError.badAnswer(method: CloudMethod.container.rawValue, dc: answer.endpoint.description, reason: "\(error)")
        }
        guard answers.count == 2 else {
            throw CloudClientError.badAnswer(
                method: CloudMethod.container.rawValue, dc: answer.endpoint.description, reason: "\(answers.count) answers for 2 calls")
        }
        let (part, sent) = (inner(answer, answers[0]), inner(answer, answers[1]))
        let partError = try failure(of: part, .saveFilePart)
        if partError == nil { try checkOk(part, .saveFilePart) }
        if let error = try failure(of: sent, .sendMedia) { return ContainedSendOutcome(partError: partError, message: .failure(error)) }
        let message = try checkedMessage(try decode(SendMediaResponse.self, from: sent, method: .sendMedia).message, request, dc: dc)
        return ContainedSendOutcome(partError: partError, message: .success(message))
    }

    /// One contained call's answer, as if it had come alone from where the container went.
    private func inner(_ container: CloudAnswer, _ call: (status: Int, body: Data)) -> CloudAnswer {
        var answer = container
        answer.response.status = call.status
        answer.response.headers = []
        answer.response.body = call.body
        return answer
    }

    /// A contained call's error, nil when it succeeded.
    private func failure(of answer: CloudAnswer, _ method: CloudMethod) throws -> CloudClientError? {
        guard !(200..<300).contains(answer.response.status) else { return nil }
        let error = try Self.errorOf(answer.response, method: method.rawValue, target: answer.endpoint)
        return .server(error, method: method.rawValue, dc: answer.endpoint.description)
    }
}

/// What `saveFileAndSendMedia` got back: each call's own outcome, as if each had been sent alone.
public struct ContainedSendOutcome: Sendable {
    /// The part's failure, nil when it was stored.
    public var partError: CloudClientError?
    /// The message, or why `sendMedia` failed (a part that failed is missing for it, too).
    public var message: Result<Message, CloudClientError>
}
