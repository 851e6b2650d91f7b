import CloudProtocol
import Foundation

/// Everything that shapes a cloudd instance: ports, dataset, references, CDN, faults.
public struct CloudServerConfig: Sendable {
    /// Seed of the dataset and of all file bytes.
    public var seed: UInt64 = 1
    /// Number of datacenters (ids 1…dcCount).
    public var dcCount: Int = 3
    /// Bind host (loopback).
    public var host: String = "127.0.0.1"
    /// DC n listens on `portBase + n - 1`, the CDN on `portBase + 100`; 0 = ephemeral ports.
    public var portBase: Int = 0
    /// File reference lifetime in seconds.
    public var referenceTTL: Int = 3600
    /// Share of dataset files (not secret, not uploaded) served through the CDN redirect.
    public var cdnFraction: Double = 0
    /// Share of CDN files that answer FILE_REUPLOAD_NEEDED until reuploaded.
    public var cdnReuploadFraction: Double = 0.5
    /// Initial fault knobs.
    public var faults = FaultConfig()
    /// Dataset shape.
    public var dataset = DatasetConfig()
    /// Where uploaded parts and files go; `nil` = a fresh directory under the system temp dir,
    /// removed on `stop()`.
    public var uploadDirectory: String?
    /// Compute every file's part hashes (`X-Part-SHA256` of the parts clients are told to use)
    /// in the background from start-up, and an uploaded file's once it is sent, instead of on
    /// the first request for each part. `GET /admin/part-hashes` reports the files still pending.
    public var partHashesAtStart = false

    public init() {}
}

/// The size and shape of the synthetic dataset.
public struct DatasetConfig: Sendable {
    /// Peers, kinds round-robin: contact, user, group, channel, secret chat.
    public var peers: Int = 10
    public var messagesPerPeer: Int = 30
    /// Largest generated document/video in the regular dataset.
    public var maxMediaSize: Int64 = 8 << 20
    public var stickerSets: Int = 2
    public var stickersPerSet: Int = 4
    public var wallpapers: Int = 3
    /// Stories per contact and channel peer.
    public var storiesPerPeer: Int = 1
    /// Extra benchmark files: groups of `count` documents with sizes uniform in `minSize…maxSize`,
    /// one per message in a dedicated "bench" channel.
    public var bulkFiles: [BulkFileSpec] = []
    /// Extra benchmark files of exact sizes (e.g. 10 × 100 MB, 1 × 2 GiB), in the bench channel.
    public var bigFiles: [Int64] = []
    /// Streamable videos of these sizes in the benchmark channel, after the other files.
    public var benchVideos: [Int64] = []
    /// When > 0, one message (in the first group) carries this many document media items.
    public var bundleSize: Int = 0
    /// How many such bundle messages (consecutive, in the same peer; the listing names the
    /// first): e.g. 1,000 × 100 documents = 100,000 references over 1,000 parents for the
    /// revalidation benchmark.
    public var bundleCount: Int = 1
    /// Unix seconds of "now" for message dates; `nil` = current time rounded down to the day.
    public var baseDate: Int64?

    public init() {}
}

/// `count` files with sizes uniformly drawn from `minSize…maxSize`.
public struct BulkFileSpec: Sendable, Hashable {
    public var count: Int
    public var minSize: Int64
    public var maxSize: Int64

    public init(count: Int, minSize: Int64, maxSize: Int64) {
        self.count = count
        self.minSize = minSize
        self.maxSize = maxSize
    }

    /// Parses `COUNT:MIN-MAX` (e.g. `2000:10K-200K`) or `COUNT:SIZE` (e.g. `10:100M`); sizes per
    /// `BulkFileSpec.parseSize`.
    public init?(parsing s: String) {
        let parts = s.split(separator: ":")
        guard parts.count == 2, let c = Int(parts[0]), c >= 0 else { return nil }
        let range = parts[1].split(separator: "-")
        if range.count == 1, let v = BulkFileSpec.parseSize(String(range[0])), v > 0 {
            self.init(count: c, minSize: v, maxSize: v)
        } else if range.count == 2, let a = BulkFileSpec.parseSize(String(range[0])), let b = BulkFileSpec.parseSize(String(range[1])), a > 0, b >= a {
            self.init(count: c, minSize: a, maxSize: b)
        } else {
            return nil
        }
    }

    /// Bytes from `123`, `10K`/`10KB` (×1000), `10KiB` (×1024), `100M`/`MB`, `MiB`, `2G`/`GB`, `GiB`.
    public static func parseSize(_ s: String) -> Int64? {
        let t = s.trimmingCharacters(in: .whitespaces)
        let units: [(String, Int64)] = [
            ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30),
            ("KB", 1_000), ("MB", 1_000_000), ("GB", 1_000_000_000),
            ("K", 1_000), ("M", 1_000_000), ("G", 1_000_000_000),
        ]
        for (suffix, mult) in units where t.hasSuffix(suffix) {
            guard let v = Double(t.dropLast(suffix.count)), v >= 0 else { return nil }
            return Int64(v * Double(mult))
        }
        return Int64(t)
    }
}
