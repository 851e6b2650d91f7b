import MediaBox
import Postbox

/// The photos a `generate-representations` run works on: complete photos in the account's
/// MediaBox (`media/`, content type photo) used within the lookback window, most recently used
/// first, at most `limit`. Read from StorageBox's rows alone, in chunks: no file-system walk.
struct RepresentationSelection {
    struct Photo: Sendable {
        let id: MediaResourceId
        let info: MediaResourceStorageInfo
        let accessTime: Int64
    }

    var photos: [Photo] = []
    /// Photos in the window beyond `limit`, left for the next run.
    var overLimit = 0

    static func scan(_ storageBox: StorageBox, since horizon: Int64, limit: Int) throws -> RepresentationSelection {
        var found: [Photo] = []
        var cursor: MediaStorageKey?
        while true {
            let rows = try storageBox.entries(after: cursor, limit: 2048)
            guard let last = rows.last else { break }
            cursor = last.key
            for row in rows where row.info.location == .resources && row.info.contentType == .photo && row.accessTime >= horizon {
                found.append(Photo(id: MediaResourceId(row.resourceId), info: row.info, accessTime: row.accessTime))
            }
        }
        found.sort { ($0.accessTime, $1.id.stringRepresentation) > ($1.accessTime, $0.id.stringRepresentation) }
        var selection = RepresentationSelection()
        selection.overLimit = max(0, found.count - limit)
        selection.photos = Array(found.prefix(limit))
        return selection
    }
}
