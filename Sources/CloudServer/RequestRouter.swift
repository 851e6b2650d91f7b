import CloudProtocol
import Foundation
import Hummingbird

/// Which listener a request arrived on.
enum ListenerRole: Sendable, Equatable {
    case dc(Int)
    case cdn
}

/// Dispatches one request: health, admin (DCs, unfaulted), API methods and plain URLs with
/// latency and error injection, and turns thrown `CloudError`s into JSON error answers.
extension ServerCore {
    func respond(to request: Request, role: ListenerRole) async -> Response {
        let path = request.uri.path
        var request = request
        do {
            if path == "/health" { return HTTPSupport.json(OkResponse()) }
            let segments = path.split(separator: "/", omittingEmptySubsequences: true)
            if case .dc = role, segments.first == "admin" {
                return try await admin(&request, path: Array(segments.dropFirst()))
            }
            let delay = faults.current.networkDelay
            try await delay.beforeAnswer()
            request.body = delay.paced(request.body)
            if segments.first == "api", segments.count == 2 {
                return await answer(to: &request, name: String(segments[1]), role: role)
            }
            if case .dc = role, segments.first == "plain" {
                if segments.count == 3, segments[1] == "upload", request.method == .put {
                    counters.method("plain.upload")
                    return try await plainUpload(request, name: String(segments[2]))
                }
                if segments.count == 2, request.method == .get || request.method == .head {
                    return try await plain(request, idString: segments[1])
                }
            }
            throw CloudError(.methodInvalid, message: "no route \(request.method) \(path)")
        } catch {
            return errorAnswer(error)
        }
    }

    /// One API call's answer, a thrown error as its error answer (a call alone, or one of a
    /// container's).
    func answer(to request: inout Request, name: String, role: ListenerRole) async -> Response {
        do {
            return try await api(&request, name: name, role: role)
        } catch {
            return errorAnswer(error)
        }
    }

    private func errorAnswer(_ error: any Error) -> Response {
        if let e = error as? CloudError {
            counters.error(e.name.rawValue)
            return HTTPSupport.error(e)
        }
        counters.error(CloudErrorName.internalError.rawValue)
        return HTTPSupport.error(CloudError(.internalError, message: "\(error)"))
    }

    private func api(_ request: inout Request, name: String, role: ListenerRole) async throws -> Response {
        guard request.method == .post, let method = CloudMethod(rawValue: name) else {
            throw CloudError(.methodInvalid, message: "unknown method \(name)")
        }
        counters.method(method.rawValue)
        // A container's calls roll their own faults, each as it runs.
        if method == .container { return try await container(&request, role: role) }
        if case .error(let e) = faults.rollError(isRevalidation: method.isRevalidation) { throw CloudError(e) }
        let malformed = faults.rollMalformed()
        switch malformed {
        case .badJSON:
            return Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(string: "{\"messages\": [tru")))
        case .unknownError:
            throw CloudError(code: 400, name: .other("WEIRD_ERROR_42"), message: "injected unknown error")
        default:
            break
        }
        let response = try await dispatch(&request, method: method, role: role)
        return malformed == .shortPart || malformed == .oversizePart ? HTTPSupport.malform(response, malformed) : response
    }

    private func dispatch(_ request: inout Request, method: CloudMethod, role: ListenerRole) async throws -> Response {
        switch role {
        case .cdn:
            guard method == .getCdnFile else { throw CloudError(.methodInvalid, message: "the CDN serves only upload.getCdnFile") }
            return try await getCdnFile(&request)
        case .dc(let dc):
            switch method {
            case .getFile: return try await getFile(&request, dc: dc)
            case .getCdnFileHashes: return try await getCdnFileHashes(&request, dc: dc)
            case .reuploadCdnFile: return try await reuploadCdnFile(&request, dc: dc)
            case .getCdnFile: throw CloudError(.methodInvalid, message: "upload.getCdnFile is served by the CDN")
            case .saveFilePart: return try await saveFilePart(request, big: false)
            case .saveBigFilePart: return try await saveFilePart(request, big: true)
            case .sendMedia: return try await sendMedia(&request, dc: dc)
            case .container: throw CloudError(.methodInvalid, message: "a container is not a call")
            case .getConfig: return getConfig(dc: dc)
            case .getDialogs: return try await getDialogs(&request)
            case .getHistory: return try await getHistory(&request)
            case .getMessages: return try await getMessages(&request)
            case .getPeerPhoto: return try await getPeerPhoto(&request)
            case .getStickerSet: return try await getStickerSet(&request)
            case .getAllStickers: return getAllStickers()
            case .getWallPaper: return try await getWallPaper(&request)
            case .getWallPapers: return getWallPapers()
            case .getStoryById: return try await getStoryById(&request)
            case .getPeerStories: return try await getPeerStories(&request)
            }
        }
    }
}
