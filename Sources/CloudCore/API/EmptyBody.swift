/// `{}`: the body of calls without parameters.
public struct EmptyBody: Codable, Sendable, Hashable {
    public init() {}
}
