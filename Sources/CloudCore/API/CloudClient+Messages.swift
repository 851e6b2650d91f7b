import CloudProtocol
import Foundation

/// Chat list, history and messages by id (`docs/cloud-protocol.md` §6), each answer checked
/// against its request before it is returned, so nothing inconsistent reaches Postbox.
extension CloudClient {
    /// `help.getConfig` at `dc` (default: the main DC).
    public func getConfig(dc: Int? = nil) async throws -> ConfigResponse {
        try await call(.getConfig, dc: dc, body: EmptyBody())
    }

    /// One page of the chat list, newest top message first. `limit` 1…100.
    public func getDialogs(offset: Int = 0, limit: Int = 100) async throws -> GetDialogsResponse {
        guard (1...100).contains(limit), offset >= 0 else {
            throw CloudClientError.invalidRequest("getDialogs needs offset ≥ 0 and limit 1…100 (got \(offset), \(limit))")
        }
        let r: GetDialogsResponse = try await call(.getDialogs, body: GetDialogsRequest(offset: offset, limit: limit))
        let bad = { (reason: String) in CloudClientError.badAnswer(method: CloudMethod.getDialogs.rawValue, dc: "main DC", reason: reason) }
        if r.dialogs.count > limit { throw bad("\(r.dialogs.count) dialogs for limit \(limit)") }
        if let next = r.nextOffset, next <= offset { throw bad("nextOffset \(next) does not advance past \(offset)") }
        if r.count < 0 { throw bad("negative count") }
        if Set(r.dialogs.map(\.peer.id)).count != r.dialogs.count { throw bad("a peer appears twice in one page") }
        for d in r.dialogs where d.peer.id <= 0 || d.topMessageId < 0 {
            throw bad("dialog with peer id \(d.peer.id) / top message \(d.topMessageId)")
        }
        return r
    }

    /// Messages of `peerId` with `minId < id < offsetId` (`offsetId` 0: no upper bound), newest
    /// first, at most `limit` (1…100). Checked: peer, id window, order, count.
    public func getHistory(peerId: Int64, offsetId: Int32 = 0, minId: Int32 = 0, limit: Int = 100) async throws -> MessagesResponse {
        guard (1...100).contains(limit) else { throw CloudClientError.invalidRequest("getHistory limit must be 1…100 (got \(limit))") }
        let r: MessagesResponse = try await call(.getHistory, body: GetHistoryRequest(peerId: peerId, offsetId: offsetId, minId: minId, limit: limit))
        let bad = { (reason: String) in CloudClientError.badAnswer(method: CloudMethod.getHistory.rawValue, dc: "main DC", reason: reason) }
        if r.messages.count > limit { throw bad("\(r.messages.count) messages for limit \(limit)") }
        var previous: Int32?
        for m in r.messages {
            if m.peerId != peerId { throw bad("message \(m.id) of peer \(m.peerId) in the history of peer \(peerId)") }
            if m.id <= minId || (offsetId > 0 && m.id >= offsetId) {
                throw bad("message id \(m.id) outside the asked window (\(minId), \(offsetId == 0 ? "∞" : String(offsetId)))")
            }
            if let p = previous, m.id >= p { throw bad("messages not newest first (\(p) then \(m.id))") }
            previous = m.id
            try Self.checkMedia(m.media, bad: bad)
        }
        if let peer = r.peer, peer.id != peerId { throw bad("answer names peer \(peer.id), asked \(peerId)") }
        return r
    }

    /// Up to 100 messages of `peerId` by id (fresh references); deleted ids are absent.
    public func getMessages(peerId: Int64, ids: [Int32]) async throws -> MessagesResponse {
        guard ids.count <= GetMessagesRequest.maxIds else {
            throw CloudClientError.invalidRequest("getMessages takes at most \(GetMessagesRequest.maxIds) ids (got \(ids.count))")
        }
        guard ids.allSatisfy({ $0 > 0 }) else { throw CloudClientError.invalidRequest("getMessages ids must be positive") }
        let r: MessagesResponse = try await call(.getMessages, body: GetMessagesRequest(peerId: peerId, ids: ids))
        let bad = { (reason: String) in CloudClientError.badAnswer(method: CloudMethod.getMessages.rawValue, dc: "main DC", reason: reason) }
        let asked = Set(ids)
        for m in r.messages {
            if m.peerId != peerId { throw bad("message of peer \(m.peerId), asked peer \(peerId)") }
            if !asked.contains(m.id) { throw bad("message \(m.id) was not asked for") }
            try Self.checkMedia(m.media, bad: bad)
        }
        return r
    }

    /// A media item must hold the entity its `type` names, with a consistent location.
    static func checkMedia(_ media: [MessageMedia], bad: (String) -> CloudClientError) throws {
        for item in media {
            switch item.type {
            case .photo:
                guard let p = item.photo else { throw bad("photo media without a photo") }
                for s in p.sizes where s.size < 0 || s.location.type != .photo { throw bad("photo \(p.id) has a bad size variant") }
            case .document:
                guard let d = item.document else { throw bad("document media without a document") }
                if d.size < 0 { throw bad("document \(d.id) with negative size") }
            case .secretFile:
                guard let f = item.secretFile else { throw bad("secretFile media without a secret file") }
                if f.size < 0 || f.size % 16 != 0 || f.decryptedSize > f.size || f.key.count != 32 || f.iv.count != 32 {
                    throw bad("secret file \(f.id) with inconsistent sizes or key material")
                }
            }
        }
    }
}
