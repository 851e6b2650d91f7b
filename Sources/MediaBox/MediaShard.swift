import ConfinedFiles
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The shard directory of a resource's files inside its location's directory: `_` and two
/// lowercase hex digits, the low byte of the CRC-32 (IEEE, as in zlib) of the safe file name's
/// UTF-8. So `media/<name>` lives at `media/_<xx>/<name>`, `media/cache/<name>` at
/// `media/cache/_<xx>/<name>`, and its `_partial` / `_partial.want` files beside it.
///
/// 256 shards spread a million files over directories of ~4,000 entries: directory operations
/// stay fast, and removal threads unlink in different directories instead of queueing on one
/// directory's lock. A safe file name never contains `_`, so no resource name is ever a shard
/// name. The function is part of the on-disk contract: never change it.
public enum MediaShard {
    /// Number of shards per location.
    public static let count = 256

    /// The shard directory name for a safe file name (`_00` … `_ff`).
    public static func name(forFileName fileName: String) -> String {
        var crc: UInt32 = 0xFFFF_FFFF
        for b in fileName.utf8 { crc = CRC32.table[Int((crc ^ UInt32(b)) & 0xff)] ^ (crc >> 8) }
        return names[Int((crc ^ 0xFFFF_FFFF) & 0xff)]
    }

    /// Every shard directory name, in order.
    public static let names: [String] = (0..<count).map { i in
        let digits = Array("0123456789abcdef")
        return "_" + String(digits[i >> 4]) + String(digits[i & 15])
    }

    /// The shard directory of a file MediaBox stores (`<name>`, `<name>_partial`,
    /// `<name>_partial.want`, an earlier version's `<name>_partial.meta`): its resource's shard,
    /// so they stay together. Nil for a name
    /// MediaBox never produces.
    public static func name(forStoredFile name: String) -> String? {
        ShardMigration.resourceFileBase(name).map { Self.name(forFileName: $0) }
    }

    /// `<locationDirectory>/<shard>/<name>` for a stored file name (nil for a foreign name).
    public static func path(in locationDirectory: String, storedFile name: String) -> String? {
        Self.name(forStoredFile: name).map { locationDirectory + "/" + $0 + "/" + name }
    }

    /// The names of the files in a location directory's shards (without the shard folder), in
    /// shard order: what a listing of the location directory showed in the flat layout.
    public static func storedFileNames(in locationDirectory: ConfinedDirectory) throws -> [String] {
        var names: [String] = []
        for shard in Self.names {
            try PosixFile.forEachEntry(in: shard, of: locationDirectory) { name, type in
                if type != .directory { names.append(name) }
            }
        }
        return names
    }

    /// The same for the location directory at `path` (its shards are reached without
    /// following links).
    public static func storedFileNames(in path: String) throws -> [String] {
        try storedFileNames(in: ConfinedDirectory.open(path: path, policy: ConfinementPolicy(allowInsecure: true)))
    }

    /// Whether `name` is one of the shard directory names.
    public static func isShardName(_ name: String) -> Bool {
        let b = Array(name.utf8)
        guard b.count == 3, b[0] == UInt8(ascii: "_") else { return false }
        func hex(_ c: UInt8) -> Bool { (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) }
        return hex(b[1]) && hex(b[2])
    }
}

/// How resource files are arranged inside each location's directory. Recorded in StorageBox's
/// metadata once a migration has finished (`StorageBox.mediaLayout`).
public enum MediaLayout: UInt32, Sendable {
    /// Every file directly in its location's directory (stores written before sharding).
    case flat = 1
    /// Every file in its shard directory (`MediaShard`).
    case sharded = 2
}
