import CloudProtocol
import Foundation
import Hummingbird

/// Chat list, history, messages by id, and the parent-entity fetches (avatar, sticker set,
/// wallpaper, story). Every answer carries fresh file references.
extension ServerCore {
    func getConfig(dc: Int) -> Response {
        let u = urls.withLock { $0 }
        return HTTPSupport.json(
            ConfigResponse(
                thisDc: dc, dcs: u.dcs.keys.sorted().map { DcOption(id: $0, url: u.dcs[$0]!) },
                cdn: DcOption(id: ServerCore.cdnDcId, url: u.cdn), referenceTTL: references.ttlSeconds))
    }

    func getDialogs(_ request: inout Request) async throws -> Response {
        let body = try await HTTPSupport.decode(GetDialogsRequest.self, from: &request)
        guard (1...100).contains(body.limit) else { throw CloudError(.limitInvalid) }
        guard body.offset >= 0 else { throw CloudError(.offsetInvalid) }
        let all: [(Peer, Message?, Int)] = dataset.withLock { ds in
            ds.peers.map { p in (p, ds.messages[p.id]?.last, ds.messages[p.id]?.count ?? 0) }
        }
        let sorted = all.sorted { a, b in
            let da = a.1?.date ?? 0, db = b.1?.date ?? 0
            return da != db ? da > db : a.0.id < b.0.id
        }
        let page = sorted.dropFirst(body.offset).prefix(body.limit)
        let dialogs = page.map { Dialog(peer: render($0.0), topMessageId: $0.1?.id ?? 0, topMessageDate: $0.1?.date ?? 0, messageCount: $0.2) }
        let next = body.offset + page.count < sorted.count ? body.offset + page.count : nil
        return HTTPSupport.json(GetDialogsResponse(dialogs: dialogs, count: sorted.count, nextOffset: next))
    }

    func getHistory(_ request: inout Request) async throws -> Response {
        let body = try await HTTPSupport.decode(GetHistoryRequest.self, from: &request)
        guard (1...100).contains(body.limit) else { throw CloudError(.limitInvalid) }
        let found: (Peer, [Message], Int)? = dataset.withLock { ds in
            guard let p = ds.peer(body.peerId) else { return nil }
            let list = ds.messages[p.id] ?? []
            var out: [Message] = []
            for m in list.reversed() {
                if body.offsetId > 0 && m.id >= body.offsetId { continue }
                if m.id <= body.minId { break }
                out.append(m)
                if out.count == body.limit { break }
            }
            return (p, out, list.count)
        }
        guard let (peer, msgs, count) = found else { throw CloudError(.peerIdInvalid) }
        return HTTPSupport.json(MessagesResponse(messages: msgs.map(render), count: count, peer: render(peer)))
    }

    func getMessages(_ request: inout Request) async throws -> Response {
        let body = try await HTTPSupport.decode(GetMessagesRequest.self, from: &request)
        guard body.ids.count <= GetMessagesRequest.maxIds else { throw CloudError(.limitInvalid) }
        guard body.ids.allSatisfy({ $0 > 0 }) else { throw CloudError(.messageIdInvalid) }
        let found: ([Message], Int)? = dataset.withLock { ds in
            guard ds.peer(body.peerId) != nil else { return nil }
            return (body.ids.compactMap { ds.message(peerId: body.peerId, id: $0) }, ds.messages[body.peerId]?.count ?? 0)
        }
        guard let (msgs, count) = found else { throw CloudError(.peerIdInvalid) }
        for id in body.ids { counters.parent(ParentEntity.message(peerId: body.peerId, messageId: id).key) }
        return HTTPSupport.json(MessagesResponse(messages: msgs.map(render), count: count))
    }

    func getPeerPhoto(_ request: inout Request) async throws -> Response {
        let body = try await HTTPSupport.decode(GetPeerPhotoRequest.self, from: &request)
        counters.parent(ParentEntity.peerAvatar(peerId: body.peerId).key)
        guard let p = dataset.withLock({ $0.peer(body.peerId) }) else { throw CloudError(.peerIdInvalid) }
        return HTTPSupport.json(PeerResponse(peer: render(p)))
    }

    func getStickerSet(_ request: inout Request) async throws -> Response {
        let body = try await HTTPSupport.decode(GetStickerSetRequest.self, from: &request)
        counters.parent(ParentEntity.stickerSet(id: body.id).key)
        guard let s = dataset.withLock({ $0.stickerSets[body.id] }) else { throw CloudError(.stickerSetInvalid) }
        return HTTPSupport.json(StickerSetResponse(set: render(s)))
    }

    func getAllStickers() -> Response {
        let sets = dataset.withLock { ds in ds.stickerSets.keys.sorted().map { ds.stickerSets[$0]! } }
        return HTTPSupport.json(AllStickersResponse(sets: sets.map(render)))
    }

    func getWallPaper(_ request: inout Request) async throws -> Response {
        let body = try await HTTPSupport.decode(GetWallPaperRequest.self, from: &request)
        counters.parent(ParentEntity.wallpaper(id: body.id).key)
        guard let w = dataset.withLock({ $0.wallpapers[body.id] }) else { throw CloudError(.wallpaperInvalid) }
        return HTTPSupport.json(WallpaperResponse(wallpaper: render(w)))
    }

    func getWallPapers() -> Response {
        let all = dataset.withLock { ds in ds.wallpapers.keys.sorted().map { ds.wallpapers[$0]! } }
        return HTTPSupport.json(WallpapersResponse(wallpapers: all.map(render)))
    }

    func getStoryById(_ request: inout Request) async throws -> Response {
        let body = try await HTTPSupport.decode(GetStoryRequest.self, from: &request)
        counters.parent(ParentEntity.story(peerId: body.peerId, storyId: body.id).key)
        guard let s = dataset.withLock({ $0.stories["\(body.peerId):\(body.id)"] }) else { throw CloudError(.storyIdInvalid) }
        return HTTPSupport.json(StoryResponse(story: render(s)))
    }

    func getPeerStories(_ request: inout Request) async throws -> Response {
        let body = try await HTTPSupport.decode(GetPeerStoriesRequest.self, from: &request)
        let found: [Story]? = dataset.withLock { ds in
            guard ds.peer(body.peerId) != nil else { return nil }
            return ds.stories.values.filter { $0.peerId == body.peerId }.sorted { $0.id < $1.id }
        }
        guard let stories = found else { throw CloudError(.peerIdInvalid) }
        return HTTPSupport.json(StoriesResponse(stories: stories.map(render)))
    }
}
