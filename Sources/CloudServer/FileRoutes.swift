import CloudCrypto
import CloudProtocol
import Foundation
import HTTPTypes
import Hummingbird

/// `upload.getFile`, `upload.getCdnFile`, `upload.getCdnFileHashes`, `upload.reuploadCdnFile`.
extension ServerCore {
    func getFile(_ request: inout Request, dc: Int) async throws -> Response {
        let body = try await HTTPSupport.decode(GetFileRequest.self, from: &request)
        if let e = FilePartRules.validate(offset: body.offset, limit: body.limit) { throw CloudError(e) }
        guard let file = file(body.location.id), file.location.accessHash == body.location.accessHash,
            file.location.type == body.location.type
        else {
            throw CloudError(.locationInvalid)
        }
        guard file.dcId == dc else { throw CloudError(.fileMigrate(file.dcId)) }
        if file.location.type != .secret, let e = references.check(body.fileReference, parents: file.parents) {
            throw CloudError(e)
        }
        if file.cdn {
            let cdnURL = urls.withLock { $0.cdn }
            let redirect = CdnRedirect(
                cdnDcId: ServerCore.cdnDcId, cdnURL: cdnURL, masterDcId: file.dcId,
                fileToken: cdn.token(fileId: file.id), encryptionKey: cdn.key(fileId: file.id),
                encryptionIv: cdn.iv(fileId: file.id), size: file.size,
                fileHashes: try hashes(file, from: 0))
            var r = HTTPSupport.json(GetFileRedirect(cdnRedirect: redirect))
            r.headers[HTTPField.Name(CloudHeader.result)!] = "cdnRedirect"
            return r
        }
        return try partResponse(file, offset: body.offset, limit: body.limit, encrypt: nil)
    }

    func getCdnFile(_ request: inout Request) async throws -> Response {
        let body = try await HTTPSupport.decode(GetCdnFileRequest.self, from: &request)
        if let e = FilePartRules.validate(offset: body.offset, limit: body.limit) { throw CloudError(e) }
        guard let id = cdn.fileId(token: body.fileToken), let file = file(id), file.cdn else {
            throw CloudError(.fileTokenInvalid)
        }
        guard cdn.isOnCdn(file) else { throw CloudError(.fileReuploadNeeded) }
        return try partResponse(
            file, offset: body.offset, limit: body.limit,
            encrypt: (cdn.key(fileId: file.id), cdn.iv(fileId: file.id)))
    }

    func getCdnFileHashes(_ request: inout Request, dc: Int) async throws -> Response {
        let body = try await HTTPSupport.decode(GetCdnFileHashesRequest.self, from: &request)
        let file = try cdnFile(token: body.fileToken, dc: dc)
        guard body.offset >= 0 else { throw CloudError(.offsetInvalid) }
        return HTTPSupport.json(CdnFileHashesResponse(hashes: try hashes(file, from: body.offset)))
    }

    func reuploadCdnFile(_ request: inout Request, dc: Int) async throws -> Response {
        let body = try await HTTPSupport.decode(ReuploadCdnFileRequest.self, from: &request)
        let file = try cdnFile(token: body.fileToken, dc: dc)
        cdn.markReuploaded(file.id)
        return HTTPSupport.json(CdnFileHashesResponse(hashes: try hashes(file, from: 0)))
    }

    private func cdnFile(token: Data, dc: Int) throws -> ServerFile {
        guard let id = cdn.fileId(token: token), let file = file(id), file.cdn else { throw CloudError(.fileTokenInvalid) }
        guard file.dcId == dc else { throw CloudError(.fileMigrate(file.dcId)) }
        return file
    }

    /// Up to `CdnHashWindow.blocks` block hashes from the block containing `offset`.
    func hashes(_ file: ServerFile, from offset: Int64) throws -> [CdnFileHash] {
        let bs = FilePartRules.cdnHashBlockSize
        var out: [CdnFileHash] = []
        var index = Int(offset / bs)
        while out.count < CdnHashWindow.blocks, Int64(index) * bs < file.size {
            let start = Int64(index) * bs
            out.append(CdnFileHash(offset: start, limit: min(bs, file.size - start), hash: try bytes.blockHash(file, index: index)))
            index += 1
        }
        return out
    }

    /// Raw part bytes with `X-Part-SHA256` (of the bytes as meant), optionally CTR-encrypted,
    /// with the corrupt/drop/bandwidth knobs applied.
    func partResponse(_ file: ServerFile, offset: Int64, limit: Int64, encrypt: (key: Data, iv: Data)?) throws -> Response {
        let end = min(offset + limit, file.size)
        let n = Int(max(0, end - offset))
        // Before the bytes: an answer never names a revision newer than the header it carries.
        var headerRevision: Int?
        if case .video = file.source { headerRevision = bytes.headerRevision(file.id) }
        var buffer = ByteBufferAllocator().buffer(capacity: n)
        if n > 0 {
            try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: n) { ptr in
                let dst = UnsafeMutableRawBufferPointer(rebasing: ptr[0..<n])
                try bytes.read(file, offset: offset, into: dst)
                if let (key, iv) = encrypt { try AESCTR.cryptInPlace(dst, key: key, iv: iv, offset: offset) }
                return n
            }
        }
        let sha = bytes.partHash(.init(fileId: file.id, offset: offset, count: n, encrypted: encrypt != nil)) {
            buffer.withUnsafeReadableBytes { SHA256.hash(bytes: $0) }.hexString
        }
        counters.filePart(file.id, bytes: Int64(n), offset: offset)
        var headers = HTTPFields()
        headers[.contentType] = "application/octet-stream"
        headers[HTTPField.Name(CloudHeader.result)!] = "part"
        headers[HTTPField.Name(CloudHeader.fileSize)!] = String(file.size)
        headers[HTTPField.Name(CloudHeader.partSHA256)!] = sha
        if let headerRevision { headers[HTTPField.Name(CloudHeader.headerRevision)!] = String(headerRevision) }
        let k = faults.current
        return Response(
            status: .ok, headers: headers,
            body: HTTPSupport.partBody(buffer, corrupt: faults.rollCorrupt(), drop: faults.rollDrop(), bandwidth: k.bandwidth))
    }
}
