/// Where a call goes: a datacenter by id, the account's main DC, the configured CDN, or an
/// explicit base URL (e.g. the `cdnURL` of a CDN redirect).
public enum CloudEndpoint: Sendable, Hashable, CustomStringConvertible {
    case main
    case dc(Int)
    case cdn
    case baseURL(String)

    public var description: String {
        switch self {
        case .main: return "main DC"
        case .dc(let id): return "DC \(id)"
        case .cdn: return "CDN"
        case .baseURL(let url): return url
        }
    }
}
