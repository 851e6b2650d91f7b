import CloudProtocol
import Foundation

/// In-process equivalents of the `/admin/*` calls, for tests that start the server themselves.
extension CloudServer {
    /// Request counters (as `GET /admin/counters`).
    public func counters() -> CountersResponse { core.counters.snapshot() }

    /// Part answers of one file by offset (as `GET /admin/counters/files/<id>`).
    public func partCounters(fileId: Int64) -> FilePartCounters { core.counters.partOffsets(fileId) }

    public func resetCounters() { core.counters.reset() }

    /// Gives a streamable video a revised header (`POST /admin/files/<id>/revise-header`);
    /// nil for a file that is not one.
    public func reviseHeader(fileId: Int64) throws -> HeaderRevision? { try core.reviseHeader(fileId) }

    /// The bytes `upload.getFile` serves for `range` of a file (clamped to its size).
    public func servedBytes(fileId: Int64, _ range: Range<Int64>) throws -> Data? {
        guard let f = core.file(fileId) else { return nil }
        let r = range.clamped(to: 0..<f.size)
        return try core.bytes.data(f, offset: r.lowerBound, count: r.count)
    }

    /// Expires every reference issued so far, or only those of `parent` (a `ParentEntity`).
    public func expireReferences(parent: ParentEntity? = nil) {
        if let parent { core.references.expire(parentKey: parent.key) } else { core.references.expireAll() }
    }

    /// Applies the fields present in `faults`.
    public func updateFaults(_ faults: FaultConfig) { core.faults.update(faults) }

    public var faults: FaultConfig { core.faults.config }

    /// Size, SHA-256 and placement of a file (as `GET /admin/files/<id>`); `nil` if unknown.
    public func fileInfo(id: Int64) throws -> FileInfo? { try core.fileInfo(id) }

    /// What exists (as `GET /admin/dataset`).
    public func dataset() -> DatasetListing { core.listing() }

    /// Appends new messages to a peer; they carry fresh references. `nil` for an unknown peer.
    public func addMessages(peerId: Int64, count: Int, withMedia: Bool = true) -> [Message]? {
        core.addMessages(AddMessagesRequest(peerId: peerId, count: count, withMedia: withMedia))?.map(core.render)
    }

    /// Deletes messages; `false` for an unknown peer.
    @discardableResult
    public func deleteMessages(peerId: Int64, ids: [Int32]) -> Bool {
        core.deleteMessages(DeleteMessagesRequest(peerId: peerId, ids: ids))
    }

    /// Server-side state of an upload (as `GET /admin/uploads/<id>`).
    public func uploadInfo(fileId: Int64) -> UploadInfo? { core.uploads.info(fileId) }

    /// Drops the stored parts of an upload (as `POST /admin/uploads/forget`).
    public func forgetUpload(fileId: Int64) { core.uploads.forget(fileId) }
}
