import Foundation

/// The files of one resource: the complete file `<name>` and the download in progress
/// `<name>_partial` (which records its ranges itself, `PartialRangeRecord`), where `<name>` is the id's
/// `safeFileName`, in its shard directory (`MediaShard`) inside the location's directory (or
/// directly in the location's directory in the flat layout of older stores). Nothing here ever
/// contains the raw id.
public struct ResourceStorePaths: Sendable, Hashable {
    public let directory: String
    public let fileName: String
    public let complete: String
    public let partial: String
    /// The same names relative to the media directory (`cache/_3f/<name>`): what is resolved
    /// beneath the media directory's descriptor (`ConfinedDirectory`) to reach the files.
    public let relativeDirectory: String
    public let relativeComplete: String
    public var relativePartial: String { relativeComplete + Self.partialSuffix }
    /// Where a store written by an earlier version kept the partial file's ranges (imported
    /// into the partial file when it is next opened: `PartialRangeRecord.importLegacy`).
    public var relativeLegacyMeta: String { relativeComplete + Self.legacyMetaSuffix }
    /// Ranges other processes ask the partial file's writer for (`ForeignWants`).
    public var relativeWants: String { relativeComplete + Self.wantsSuffix }

    public static let partialSuffix = "_partial"
    public static let legacyMetaSuffix = "_partial.meta"
    public static let wantsSuffix = "_partial.want"

    public init(mediaDirectory: String, location: MediaStorageLocation, fileName: String, layout: MediaLayout = .sharded) {
        precondition(
            !fileName.isEmpty && !fileName.contains("/") && fileName != "." && fileName != "..",
            "file names come from MediaResourceId.safeFileName")
        var relative = location.directoryName ?? ""
        if layout == .sharded { relative += (relative.isEmpty ? "" : "/") + MediaShard.name(forFileName: fileName) }
        let dir = relative.isEmpty ? mediaDirectory : mediaDirectory + "/" + relative
        self.relativeDirectory = relative
        self.relativeComplete = relative.isEmpty ? fileName : relative + "/" + fileName
        self.directory = dir
        self.fileName = fileName
        self.complete = dir + "/" + fileName
        self.partial = complete + Self.partialSuffix
    }

    public init(mediaDirectory: String, location: MediaStorageLocation, id: MediaResourceId, layout: MediaLayout = .sharded) {
        self.init(mediaDirectory: mediaDirectory, location: location, fileName: id.safeFileName, layout: layout)
    }

    /// `media` for resources, `media/cache`, `media/short-cache`: the parent of the shards.
    public static func locationDirectory(mediaDirectory: String, location: MediaStorageLocation) -> String {
        location.directoryName.map { mediaDirectory + "/" + $0 } ?? mediaDirectory
    }
}
