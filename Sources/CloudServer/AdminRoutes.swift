import CloudProtocol
import Foundation
import Hummingbird

/// `/admin/*` (on every DC port; never faulted): counters, reference expiry, faults, dataset
/// listing, file hashes, adding/deleting messages, upload state.
extension ServerCore {
    func admin(_ request: inout Request, path: [Substring]) async throws -> Response {
        let post = request.method == .post
        let p = path.map(String.init)
        let route =
            (post ? "POST " : "GET ")
            + p.enumerated().map { i, seg in
                // Variable segments (ids, names) become "*".
                (p.first == "files" || p.first == "uploads" || p.first == "plain-uploads" || p.first == "messages" || (p.first == "counters" && i == 2))
                    && i > 0
                    && !(p.first == "messages" && (seg == "add" || seg == "delete")) && !(p.first == "uploads" && seg == "forget") ? "*" : seg
            }.joined(separator: "/")
        switch route {
        case "GET counters":
            return HTTPSupport.json(counters.snapshot())
        case "GET counters/files/*":
            guard let id = Int64(p[2]) else { throw CloudError(.badRequest) }
            return HTTPSupport.json(counters.partOffsets(id))
        case "POST counters/reset":
            counters.reset()
            return HTTPSupport.json(OkResponse())
        case "POST references/expire":
            let body = try await HTTPSupport.decode(ExpireReferencesRequest.self, from: &request)
            if let p = body.parent {
                guard ParentEntity(key: p) != nil else { throw CloudError(.badRequest, message: "bad parent key \(p)") }
                references.expire(parentKey: p)
            } else {
                references.expireAll()
            }
            return HTTPSupport.json(OkResponse())
        case "GET faults":
            return HTTPSupport.json(faults.config)
        case "POST faults":
            faults.update(try await HTTPSupport.decode(FaultConfig.self, from: &request))
            return HTTPSupport.json(faults.config)
        case "GET part-hashes":
            return HTTPSupport.json(PartHashesStatus(pending: bytes.partHashesPending))
        case "GET dataset":
            return HTTPSupport.json(listing())
        case "GET files/*":
            guard let id = Int64(p[1]), let info = try fileInfo(id) else { throw CloudError(.locationInvalid) }
            return HTTPSupport.json(info)
        case "POST files/*/*" where p[2] == "revise-header":
            guard let revised = try Int64(p[1]).flatMap(reviseHeader) else {
                throw CloudError(.locationInvalid, message: "no streamable video \(p[1])")
            }
            return HTTPSupport.json(revised)
        case "POST messages/add":
            let body = try await HTTPSupport.decode(AddMessagesRequest.self, from: &request)
            guard let msgs = addMessages(body) else { throw CloudError(.peerIdInvalid) }
            let count = dataset.withLock { $0.messages[body.peerId]?.count ?? 0 }
            return HTTPSupport.json(MessagesResponse(messages: msgs.map(render), count: count))
        case "POST messages/delete":
            let body = try await HTTPSupport.decode(DeleteMessagesRequest.self, from: &request)
            guard deleteMessages(body) else { throw CloudError(.peerIdInvalid) }
            return HTTPSupport.json(OkResponse())
        case "GET messages/*/*":
            let peerS = p[1], idS = p[2]
            guard let pid = Int64(peerS), let mid = Int32(idS), let m = dataset.withLock({ $0.message(peerId: pid, id: mid) }) else {
                throw CloudError(.messageIdInvalid)
            }
            return HTTPSupport.json(["message": render(m)])
        case "GET uploads/*":
            let idS = p[1]
            guard let id = Int64(idS), let info = uploads.info(id) else { throw CloudError(.fileIdInvalid) }
            return HTTPSupport.json(info)
        case "POST uploads/forget":
            let body = try await HTTPSupport.decode(ForgetUploadRequest.self, from: &request)
            uploads.forget(body.fileId)
            return HTTPSupport.json(OkResponse())
        case "GET plain-uploads/*":
            let name = p[1]
            guard let info = uploads.plainInfo(name) else { throw CloudError(.badRequest, message: "no such plain upload") }
            return HTTPSupport.json(info)
        default:
            throw CloudError(.methodInvalid, message: "no admin route \(request.method) /admin/\(path.joined(separator: "/"))")
        }
    }

    /// Gives a streamable video a revised header; nil for a file that is not one.
    func reviseHeader(_ id: Int64) throws -> HeaderRevision? {
        guard let f = file(id), case .video(let headerSize) = f.source else { return nil }
        let revision = bytes.reviseHeader(f)
        return HeaderRevision(fileId: id, headerSize: headerSize, revision: revision, sha256: try bytes.sha256(f).served)
    }

    func fileInfo(_ id: Int64) throws -> FileInfo? {
        guard let f = file(id) else { return nil }
        let h = try bytes.sha256(f)
        return FileInfo(
            id: f.id, dcId: f.dcId, type: f.location.type, size: f.size, sha256: h.served,
            plaintextSHA256: h.plain, cdn: f.cdn, cdnNeedsReupload: f.cdnNeedsReupload && !cdn.isOnCdn(f),
            parents: f.parents, plainPath: "/plain/\(f.id)", location: f.location)
    }

    /// Appends messages (dated now or later); `nil` for an unknown peer.
    func addMessages(_ body: AddMessagesRequest) -> [Message]? {
        dataset.withLock { ds in
            guard ds.peer(body.peerId) != nil else { return nil }
            let now = Int64(Date().timeIntervalSince1970)
            let last = ds.messages[body.peerId]?.last?.date ?? now
            return (0..<max(0, body.count)).compactMap { i in
                ds.appendMessage(peerId: body.peerId, date: max(now, last + 1) + Int64(i), withMedia: body.withMedia ?? true)
            }
        }
    }

    /// Removes messages; `false` for an unknown peer.
    func deleteMessages(_ body: DeleteMessagesRequest) -> Bool {
        dataset.withLock { ds in
            guard ds.peer(body.peerId) != nil else { return false }
            let ids = Set(body.ids)
            ds.messages[body.peerId]?.removeAll { ids.contains($0.id) }
            return true
        }
    }

    func listing() -> DatasetListing {
        dataset.withLock { ds in
            DatasetListing(
                peers: ds.peers,
                messageCounts: Dictionary(uniqueKeysWithValues: ds.messages.map { (String($0.key), $0.value.count) }),
                stickerSetIds: ds.stickerSets.keys.sorted(), wallpaperIds: ds.wallpapers.keys.sorted(),
                stories: ds.stories.keys.sorted(), benchPeerId: ds.benchPeerId, bundleMessage: ds.bundleMessage,
                files: ds.files.keys.sorted().map { id in
                    let f = ds.files[id]!
                    return FileSummary(id: id, dcId: f.dcId, type: f.location.type, size: f.size, cdn: f.cdn, parent: f.parents.first)
                })
        }
    }
}

/// `GET /admin/part-hashes`: files whose part hashes are still being computed.
struct PartHashesStatus: Codable, Sendable {
    let pending: Int
}
