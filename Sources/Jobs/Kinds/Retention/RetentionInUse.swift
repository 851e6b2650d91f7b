import CloudCore
import Foundation
import MediaBox
import Postbox

/// The "in use" rule of history retention: a message stays while one of its files is being
/// downloaded (its partial file is locked, in this process or another) or while an upload
/// queue item that is not finished names it.
enum RetentionInUse {
    /// Reads the unfinished upload items once; probes partial-file locks live, per message.
    static func predicate(mediaBox: MediaBox, postbox: Postbox) async throws -> MessageInUse {
        let uploading = try await postbox.read { tx -> Set<MessageId> in
            var out = Set<MessageId>()
            try tx.uploadQueue.scanOpen { item in
                if let mid = item.messageId {
                    out.insert(MessageId(peerId: item.peerId, id: mid))
                }
                return true
            }
            return out
        }
        let mediaDirectory = mediaBox.directory
        let base = mediaBox.basePath
        return { message in
            if uploading.contains(message.id) { return true }
            for case let media as any CloudMedia in message.media {
                for file in media.files {
                    let id = MediaResourceId(file.resourceId)
                    for location in MediaStorageLocation.allCases {
                        if ResourceLock.isLocked(ResourceStorePaths(mediaDirectory: base, location: location, id: id).relativePartial, in: mediaDirectory) {
                            return true
                        }
                    }
                }
            }
            return false
        }
    }
}
