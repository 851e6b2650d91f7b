import Postbox

/// Returns a Postbox's free pages to the file system when they are a large enough share of it:
/// deletes leave free pages behind, and nothing else gives them back.
struct DatabaseCompaction {
    /// Fraction of the file that must be free pages before compacting (0…1).
    var threshold: Double

    /// Bytes returned to the file system (0 when below the threshold).
    func run(on postbox: Postbox) throws -> Int64 {
        let free = try postbox.freeBytes()
        let size = max(postbox.fileSize(), 1)
        guard Double(free) / Double(size) >= threshold else { return 0 }
        return try postbox.compact()
    }
}
