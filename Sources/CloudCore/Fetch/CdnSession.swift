import CloudProtocol
import Foundation

/// A download switched to the CDN by a redirect: where to read, the CTR key (a secret: the
/// description shows none of it) and the plaintext block hashes known so far.
struct CdnSession: Sendable, CustomStringConvertible {
    let redirect: CdnRedirect
    /// `redirect.cdnURL` without a trailing slash.
    let baseURL: String

    init(_ redirect: CdnRedirect) {
        self.redirect = redirect
        var s = redirect.cdnURL
        while s.hasSuffix("/") { s.removeLast() }
        self.baseURL = s
    }

    var description: String { "CdnSession(cdn \(redirect.cdnDcId), master \(redirect.masterDcId), size \(redirect.size))" }
}

/// Known 128 KiB block hashes of a CDN file, by block offset.
struct CdnHashes: Sendable {
    private(set) var byOffset: [Int64: Data] = [:]

    mutating func merge(_ hashes: [CdnFileHash]) {
        for h in hashes where h.offset >= 0 && h.offset % FilePartRules.cdnHashBlockSize == 0 { byOffset[h.offset] = h.hash }
    }

    /// The first block offset in `range` without a hash, if any.
    func firstMissing(in range: Range<Int64>) -> Int64? {
        let block = FilePartRules.cdnHashBlockSize
        var o = (range.lowerBound / block) * block
        while o < range.upperBound {
            if byOffset[o] == nil { return o }
            o += block
        }
        return nil
    }

    func subset(_ range: Range<Int64>) -> [Int64: Data] {
        let block = FilePartRules.cdnHashBlockSize
        var out: [Int64: Data] = [:]
        var o = (range.lowerBound / block) * block
        while o < range.upperBound {
            if let h = byOffset[o] { out[o] = h }
            o += block
        }
        return out
    }
}
