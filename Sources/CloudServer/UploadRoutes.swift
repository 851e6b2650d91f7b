import CloudCrypto
import CloudProtocol
import Foundation
import Hummingbird

/// `upload.saveFilePart`, `upload.saveBigFilePart`, `messages.sendMedia`, `PUT /plain/upload/<name>`.
extension ServerCore {
    func saveFilePart(_ request: Request, big: Bool) async throws -> Response {
        guard let fileId = request.int64Query(UploadQuery.fileId), let partQ = request.int64Query(UploadQuery.part) else {
            throw CloudError(.badRequest, message: "fileId and part query parameters are required")
        }
        guard fileId != 0 else { throw CloudError(.fileIdInvalid) }
        let part = Int(partQ)
        var total: Int?
        if big {
            guard let t = request.int64Query(UploadQuery.totalParts), t > 0, t <= Int64(UploadPartRules.maxParts) else {
                throw CloudError(.filePartsInvalid, message: "totalParts must be 1…\(UploadPartRules.maxParts)")
            }
            total = Int(t)
        }
        guard part >= 0, part < (total ?? UploadPartRules.maxParts) else { throw CloudError(.filePartsInvalid, message: "part out of range") }
        // The body is read into memory (≤ 512 KiB) and written to the upload's file at the part's
        // offset only when complete: a request that fails half-way leaves the stored copy alone.
        let body = try await BodyChunks.read(request.body, maxBytes: UploadPartRules.maxPartSize)
        guard UploadPartRules.isValidAnyPartSize(body.size) else { throw CloudError(.filePartSizeInvalid) }
        try uploads.check(fileId: fileId, totalParts: total, big: big)
        let hint = UploadPartsFile.partSizeHint(part: part, size: body.size, totalParts: total, big: big)
        while true {
            let file = uploads.partsFile(fileId)
            guard try file.write(part: part, chunks: body.chunks, size: body.size, hint: hint) == .written else { continue }
            let (hasher, generation) = try uploads.record(fileId: fileId, part: part, size: body.size, totalParts: total, big: big, file: file)
            hasher.offer(part: part, generation: generation, chunks: body.chunks)
            // Answered once the hashing has caught up enough (see `UploadHasher.pace`).
            await hasher.pace(part: part)
            break
        }
        return HTTPSupport.json(OkResponse())
    }

    func sendMedia(_ request: inout Request, dc: Int) async throws -> Response {
        let body = try await HTTPSupport.decode(SendMediaRequest.self, from: &request)
        if let done = await uploads.claim(randomId: body.randomId) {
            guard let m = dataset.withLock({ $0.message(peerId: done.peerId, id: done.messageId) }) else {
                throw CloudError(.messageIdInvalid, message: "the message sent with this random id was deleted")
            }
            return HTTPSupport.json(SendMediaResponse(message: render(m)))
        }
        do {
            let m = try await createUploadedMessage(body, dc: dc)
            uploads.finishSend(randomId: body.randomId, peerId: m.peerId, messageId: m.id)
            return HTTPSupport.json(SendMediaResponse(message: render(m)))
        } catch {
            uploads.abandonSend(randomId: body.randomId)
            throw error
        }
    }

    private func createUploadedMessage(_ body: SendMediaRequest, dc: Int) async throws -> Message {
        guard dataset.withLock({ $0.peer(body.peerId) }) != nil else { throw CloudError(.peerIdInvalid) }
        let f = body.file
        guard f.id != 0 else { throw CloudError(.fileIdInvalid) }
        guard f.parts >= 1, f.parts <= UploadPartRules.maxParts else { throw CloudError(.filePartsInvalid) }
        if let wait = body.partsWaitMs, wait > 0 {
            // Pipelined: parts sent just before this call may still be arriving.
            await uploads.waitForParts(f.id, count: f.parts, upTo: .milliseconds(min(wait, SendMediaRequest.maxPartsWaitMs)))
        }
        guard let entry = uploads.entry(f.id) else { throw CloudError(.filePartMissing(0)) }
        var sizes: [Int] = []
        for p in 0..<f.parts {
            guard let s = entry.partSizes[p] else { throw CloudError(.filePartMissing(p)) }
            sizes.append(s)
        }
        if entry.partSizes.keys.contains(where: { $0 >= f.parts }) { throw CloudError(.filePartsInvalid, message: "more parts stored than declared") }
        if entry.big != f.big { throw CloudError(.filePartsInvalid, message: "big flag does not match the part calls") }
        if f.big, entry.totalParts != f.parts { throw CloudError(.filePartsInvalid, message: "totalParts \(entry.totalParts ?? -1) ≠ parts \(f.parts)") }
        if f.parts > 1 {
            let first = sizes[0]
            guard UploadPartRules.isValidFullPartSize(first), sizes.dropLast().allSatisfy({ $0 == first }), sizes.last! <= first else {
                throw CloudError(.filePartsInvalid, message: "part sizes differ")
            }
        }
        let total = Int64(sizes.reduce(0, +))
        if !f.big, UploadPartRules.isBigFile(size: total) { throw CloudError(.filePartsInvalid, message: "files over 10 MiB need saveBigFilePart") }

        // The parts were hashed and assembled as they arrived: wait only for those not done yet
        // (arrived out of order or re-sent). MD5 only if asked for (read from the parts).
        guard let hasher = uploads.hasher(f.id), let shaHex = await hasher.digest(parts: f.parts) else {
            throw CloudError(.filePartMissing(0))
        }
        if let want = f.sha256, want.lowercased() != shaHex { throw CloudError(.checksumInvalid) }
        if let want = f.md5 {
            let got = try await hasher.file.md5(parts: f.parts)
            guard want.lowercased() == got else { throw CloudError(.checksumInvalid) }
        }

        // No copy at send time: the parts' file (each part already at its offset) is truncated to
        // the total and renamed into place.
        let newId = dataset.withLock { ds -> Int64 in
            ds.nextFileId += 1; return ds.nextFileId
        }
        let dest = uploads.directory.appendingPathComponent("files/\(newId)")
        try hasher.file.finish(partSizes: sizes, to: dest.path)
        bytes.knownSHA256(fileId: newId, served: shaHex)

        let msg: Message? = dataset.withLock { ds in
            let mid = ds.nextMessageId[body.peerId, default: 1]
            let parent = ParentEntity.message(peerId: body.peerId, messageId: mid)
            let loc = FileLocation(type: .document, id: newId, accessHash: ds.rng.jsonSafeNonZero(), dcId: dc)
            ds.files[newId] = ServerFile(location: loc, size: total, source: .disk(path: dest.path), cdn: false, cdnNeedsReupload: false, parents: [parent.key])
            let doc = Document(
                id: newId, accessHash: loc.accessHash, dcId: dc, kind: .file, size: total,
                mimeType: body.mimeType ?? "application/octet-stream", fileName: f.name,
                date: Int64(Date().timeIntervalSince1970), location: loc, fileReference: Data())
            return ds.appendMessage(
                peerId: body.peerId, date: Int64(Date().timeIntervalSince1970), text: body.caption ?? "",
                media: [MessageMedia(document: doc)], randomId: body.randomId)
        }
        guard let m = msg else { try? FileManager.default.removeItem(at: dest); throw CloudError(.peerIdInvalid) }
        uploads.consumed(f.id)
        if config.partHashesAtStart, let file = file(newId) { bytes.computePartHashes([file]) }
        return m
    }

    func plainUpload(_ request: Request, name: String) async throws -> Response {
        guard !name.isEmpty, name.count <= 200, !name.contains("/"), !name.contains("\0"), name != ".", name != ".." else {
            throw CloudError(.badRequest, message: "bad name")
        }
        let dest = uploads.directory.appendingPathComponent("plain/\(name)")
        let tmp = uploads.directory.appendingPathComponent("plain/.\(name).tmp-\(UUID().uuidString)")
        let r = try await BodyFile.write(request.body, to: tmp, maxBytes: Int64.max, hash: true)
        try? FileManager.default.removeItem(at: dest)
        try FileManager.default.moveItem(at: tmp, to: dest)
        let info = PlainUploadInfo(name: name, size: r.size, sha256: r.sha256 ?? "")
        uploads.recordPlain(info)
        return HTTPSupport.json(info, status: .created)
    }
}

/// A request body held as the buffers it arrived in (an upload part, ≤ 512 KiB), with a size cap.
enum BodyChunks {
    static func read(_ body: RequestBody, maxBytes: Int) async throws -> (chunks: [ByteBuffer], size: Int) {
        var chunks: [ByteBuffer] = []
        var size = 0
        for try await buffer in body {
            size += buffer.readableBytes
            if size > maxBytes { throw CloudError(.filePartSizeInvalid, message: "part larger than \(maxBytes) bytes") }
            if buffer.readableBytes > 0 { chunks.append(buffer) }
        }
        return (chunks, size)
    }
}

/// Streams a request body into a file, with a size cap, hashing it if asked (plain uploads
/// answer the hash; upload parts are hashed in file order by `UploadHasher` instead).
enum BodyFile {
    static func write(_ body: RequestBody, to url: URL, maxBytes: Int64, hash: Bool) async throws -> (size: Int64, sha256: String?) {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        guard let fh = FileHandle(forWritingAtPath: url.path) else { throw CloudError(.internalError, message: "cannot create file") }
        defer { try? fh.close() }
        var size: Int64 = 0
        var sha = SHA256()
        for try await buffer in body {
            size += Int64(buffer.readableBytes)
            if size > maxBytes { throw CloudError(.filePartSizeInvalid, message: "part larger than \(maxBytes) bytes") }
            try buffer.withUnsafeReadableBytes { raw in
                if hash { sha.update(raw) }
                try fh.write(
                    contentsOf: Data(
                        bytesNoCopy: UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!), count: raw.count,
                        deallocator: .none))
            }
        }
        return (size, hash ? sha.finalize().hexString : nil)
    }
}
