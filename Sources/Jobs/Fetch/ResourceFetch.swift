import CloudCore
import Foundation
import MediaBox
import Postbox

/// `jobrun fetch --resource ID`: a one-off fetch of one resource, or some of its ranges, into the
/// account's shared MediaBox, at a priority. The resource is found among the media of the
/// account's stored messages and chats' avatars. Another process fetching the same resource
/// (a scheduled prefetch) is asked for the ranges instead of downloading them again.
public enum ResourceFetch {
    /// What the fetch left in the MediaBox.
    public struct Outcome: Sendable {
        /// The complete file, or the partial file holding `held`.
        public var path: String
        public var complete: Bool
        public var held: [Range<Int64>]
        public var size: Int64?
    }

    public static func fetch(
        resourceId: String, ranges: [Range<Int64>]?, priority: MediaFetchPriority, account id: Int64, root: DataRoot
    ) async throws -> Outcome {
        let account = try await AccountContextPool(root: root).context(for: id, cloud: true)
        guard let (resource, info) = try await find(resourceId, in: account.postbox) else {
            throw JobError(
                "account \(id) has no stored media with resource id \(ShownText.escaped(resourceId))", exitCode: .usage, retryable: false)
        }
        let fetcher = try account.mediaFetcher(over: account.fetcher())
        let box = account.mediaBox
        let data: MediaResourceData
        do {
            data = try await box.fetch(resource, info: info, ranges: ranges, priority: priority, fetcher: fetcher)
        } catch {
            throw JobError("cannot fetch \(ShownText.escaped(resourceId)): \(error)")
        }
        let held = box.heldRanges(resource.id, location: info.location)
        return Outcome(path: data.path, complete: data.complete, held: held?.ranges.ranges ?? [], size: held?.size ?? resource.size)
    }

    /// The stored media file with `resourceId` and how StorageBox records it.
    static func find(_ resourceId: String, in postbox: Postbox) async throws -> (any CloudFetchableResource, MediaResourceStorageInfo)? {
        try await postbox.read { tx in
            for peer in try tx.peers.all() {
                var found: (any CloudFetchableResource, MediaResourceStorageInfo)?
                let peerClass = PeerStorageClass(peer.category)
                try tx.messages.scan(peer: peer.id, newestFirst: true, since: 0) { message in
                    for case let media as any CloudMedia in message.media {
                        guard let file = media.files.first(where: { $0.resourceId == resourceId }),
                            let resource = media.resources(parent: .message(message.id)).first(where: {
                                $0.id.stringRepresentation == resourceId
                            })
                        else { continue }
                        found = (
                            resource,
                            MediaResourceStorageInfo(
                                peerId: peer.id, peerClass: peerClass, messageId: message.id, contentType: file.contentType)
                        )
                        return false
                    }
                    return true
                }
                if let found { return found }
                if let avatar = peer.photo as? CloudAvatarMedia,
                    let resource = avatar.resources(parent: .avatar(peer.id)).first(where: { $0.id.stringRepresentation == resourceId })
                {
                    return (resource, MediaResourceStorageInfo(peerId: peer.id, peerClass: peerClass, contentType: .avatar))
                }
            }
            return nil
        }
    }
}
