import CloudProtocol
import Foundation
import MediaBox

/// The seam for file-reference revalidation: given a resource whose reference the cloud
/// rejected (`FILE_REFERENCE_EXPIRED`), re-fetch its parent entity and return the fresh reference.
///
/// `MultipartFetch` calls it at most once per failed reference per download (parts in flight
/// wait for that one call) and retries with the answer. Implementations should deduplicate
/// across resources of one parent (ten photos of one message → one `getMessages`). Without a
/// revalidator the fetch fails with `MultipartFetchError.fileReferenceExpired`.
public protocol ReferenceRevalidator: Sendable {
    /// A fresh reference for `location`, from re-fetching `parent`. Throwing fails the download
    /// with that error (e.g. the message was deleted).
    func revalidate(resourceId: MediaResourceId, location: FileLocation, parent: MediaResourceReference) async throws -> FileReference
}
