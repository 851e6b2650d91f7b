import CloudProtocol
import Foundation
import MediaBox

/// Verified bytes of one part and the file size the server reported: in memory, or already
/// written into the partial file (`written` bytes at the part's offset).
struct PartData: Sendable {
    let data: Data
    let written: Int64
    let fileSize: Int64
    /// `X-Header-Revision` of the answer (streamable videos only).
    var headerRevision: Int64?

    init(data: Data, fileSize: Int64) {
        self.data = data
        self.written = 0
        self.fileSize = fileSize
    }

    init(written: Int64, fileSize: Int64) {
        self.data = Data()
        self.written = written
        self.fileSize = fileSize
    }
}

/// What one part request came to; `FileDownload` decides what to do next.
enum PartOutcome: Sendable {
    /// Verified bytes.
    case data(PartData)
    /// Try again after a backoff. `badAnswer`: the server broke the protocol (wrong length,
    /// failed checksum, bad JSON) rather than being unreachable or failing with 5xx.
    case retry(reason: String, badAnswer: Bool)
    /// `FLOOD_WAIT_<s>`.
    case floodWait(Int)
    /// `FILE_MIGRATE_<n>`.
    case migrate(Int)
    /// `upload.getFile` answered with a CDN redirect.
    case redirect(CdnRedirect)
    /// `FILE_REFERENCE_EXPIRED` for the reference that was sent.
    case referenceExpired(FileReference)
    /// `FILE_REUPLOAD_NEEDED` from the CDN (the reupload generation that was current).
    case reuploadNeeded(generation: Int)
    /// `FILE_TOKEN_INVALID` from the CDN: start over at the master DC.
    case tokenInvalid
    /// Give up with this error.
    case fatal(MultipartFetchError)
}

/// Reading the error of a non-2xx answer.
enum ErrorAnswer {
    /// The error name from `X-Cloud-Error` or the JSON envelope; nil when neither is readable.
    static func name(_ response: HTTPResponse) -> CloudErrorName? {
        if let h = response.header(CloudHeader.error), !h.isEmpty { return CloudErrorName(parsing: h) }
        if let env = try? JSONDecoder().decode(CloudErrorEnvelope.self, from: response.body) { return env.error.name }
        return nil
    }

    /// The outcome for an error answer that is not specific to one route. `resourceId` names the
    /// resource in fatal errors.
    static func outcome(_ response: HTTPResponse, resourceId: MediaResourceId) -> PartOutcome {
        guard let name = name(response) else {
            if response.status >= 500 { return .retry(reason: "HTTP \(response.status)", badAnswer: false) }
            return .retry(reason: "HTTP \(response.status) without an error name", badAnswer: true)
        }
        switch name {
        case .floodWait(let s):
            let header = response.header(CloudHeader.retryAfter).flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            return .floodWait(max(s, header ?? 0))
        case .fileMigrate(let dc): return .migrate(dc)
        case .internalError: return .retry(reason: "INTERNAL", badAnswer: false)
        default:
            if response.status >= 500 { return .retry(reason: "\(response.status) \(name.rawValue)", badAnswer: false) }
            return .fatal(.server(resourceId: resourceId, name: name, status: response.status))
        }
    }
}
