import CloudProtocol
import Foundation

/// One answer of `upload.getFile`: the part's bytes, or a CDN redirect.
public enum FilePartAnswer: Sendable {
    /// Bytes `[offset, offset + data.count)` of a file of `fileSize` bytes, from DC `dc`
    /// (after any migration: ask there for the next part). `data.count < limit` means end of file.
    case part(data: Data, fileSize: Int64, dc: Int)
    /// The file is served by the CDN (`docs/cloud-protocol.md` §4).
    case cdnRedirect(CdnRedirect)
}
