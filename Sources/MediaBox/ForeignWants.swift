import ConfinedFiles
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Ranges another process wants of a resource whose partial file this process is writing:
/// `<name>_partial.want`, one line `<lower> <upper> <priority>` per request, appended
/// (`O_APPEND`: each short line lands whole). A process that finds the partial file locked
/// appends what it wants and then watches the partial file's range record; the writer reads new lines at every part
/// and fetches those ranges at their priority too, so the bytes are downloaded once, by the
/// writer, and the other process waits no longer than they take. The writer removes the file
/// when it lets go of the partial file; a request that arrives after that finds the lock free.
struct ForeignWants {
    let paths: ResourceStorePaths
    let media: ConfinedDirectory
    /// Bytes of the file already read.
    private var consumed: Int64 = 0

    init(paths: ResourceStorePaths, media: ConfinedDirectory) {
        self.paths = paths
        self.media = media
    }

    /// Asks the writer of the partial file for `ranges` at `priority`.
    static func request(
        _ ranges: [Range<Int64>], priority: MediaFetchPriority, paths: ResourceStorePaths, in media: ConfinedDirectory
    ) throws {
        let text = ranges.map { "\($0.lowerBound) \($0.upperBound) \(priority.rawValue)\n" }.joined()
        let fd = try PosixFile.open(paths.relativeWants, in: media, .append)
        defer { close(fd) }
        let bytes = Array(text.utf8)
        try bytes.withUnsafeBytes { try PosixFile.pwriteAll(fd, $0, offset: 0, path: paths.partial + ".want") }
    }

    /// Requests appended since the last call.
    mutating func pull() -> [(Range<Int64>, MediaFetchPriority)] {
        guard let fd = try? PosixFile.openIfExists(paths.relativeWants, in: media, .read) else { return [] }
        defer { close(fd) }
        guard let size = try? PosixFile.fstat(fd, path: paths.partial).st_size, Int64(size) > consumed,
            let data = try? PosixFile.preadAll(fd, count: Int(Int64(size) - consumed), offset: consumed, path: paths.partial)
        else { return [] }
        // Only whole lines: a line still being appended is read next time.
        guard let end = data.lastIndex(of: UInt8(ascii: "\n")) else { return [] }
        consumed += Int64(end - data.startIndex + 1)
        var out: [(Range<Int64>, MediaFetchPriority)] = []
        for line in String(decoding: data[data.startIndex...end], as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, let lower = Int64(fields[0]), let upper = Int64(fields[1]), lower >= 0, upper > lower,
                let raw = Int(fields[2]), let priority = MediaFetchPriority(rawValue: raw)
            else { continue }
            out.append((lower..<upper, priority))
        }
        return out
    }

    /// Removes the file (the writer lets go of the partial file).
    func remove() {
        _ = try? PosixFile.unlinkIfExists(paths.relativeWants, in: media)
    }
}
