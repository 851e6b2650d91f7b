/// One datacenter (or the CDN) and its base URL.
public struct DcOption: Codable, Hashable, Sendable {
    public var id: Int
    public var url: String
    public init(id: Int, url: String) {
        self.id = id
        self.url = url
    }
}

/// Answer of `POST /api/help.getConfig` (body `{}`), on any DC.
public struct ConfigResponse: Codable, Hashable, Sendable {
    /// The DC that answered.
    public var thisDc: Int
    public var dcs: [DcOption]
    public var cdn: DcOption
    /// Reference time-to-live in seconds.
    public var referenceTTL: Int

    public init(thisDc: Int, dcs: [DcOption], cdn: DcOption, referenceTTL: Int) {
        self.thisDc = thisDc
        self.dcs = dcs
        self.cdn = cdn
        self.referenceTTL = referenceTTL
    }
}
