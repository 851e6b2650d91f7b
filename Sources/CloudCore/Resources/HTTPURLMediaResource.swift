import Foundation
import MediaBox

/// A file at a plain HTTP(S) URL on any server with Range support (nginx, `cloudd`'s
/// `/plain/<id>`): fetched in ranges, resumable, size learnt from `Content-Range` when unknown.
///
/// The id is `http-url-<sha256(url)>`: stable, safe as a file name, and it does not reveal the
/// URL (which may carry a token). The URL itself is never printed.
public struct HTTPURLMediaResource: CloudFetchableResource, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let url: String
    public let size: Int64?

    /// Nil unless `url` is an absolute `http://` or `https://` URL with a host.
    public init?(url: String, size: Int64? = nil) {
        guard let u = URL(string: url), let scheme = u.scheme?.lowercased(), scheme == "http" || scheme == "https",
            u.host?.isEmpty == false
        else { return nil }
        self.url = url
        self.size = size
    }

    public var id: MediaResourceId { MediaResourceId("http-url-" + ResourceIds.hash(url)) }

    public var fetchSource: ResourceFetchSource { .plainURL(url) }

    public var description: String { "HTTPURLMediaResource(\(id), size: \(size.map(String.init) ?? "?"))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["id": id.stringRepresentation], displayStyle: .struct) }
}
