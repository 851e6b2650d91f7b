import Foundation

/// The three files of one resource: the complete file `<name>`, the download in progress
/// `<name>_partial` and its ranges map `<name>_partial.meta`, where `<name>` is the id's
/// `safeFileName` inside the location's directory. Nothing here ever contains the raw id.
public struct ResourceStorePaths: Sendable, Hashable {
    public let directory: String
    public let fileName: String
    public let complete: String
    public let partial: String
    public let partialMeta: String

    public static let partialSuffix = "_partial"
    public static let metaSuffix = "_partial.meta"

    public init(mediaDirectory: String, location: MediaStorageLocation, fileName: String) {
        precondition(
            !fileName.isEmpty && !fileName.contains("/") && fileName != "." && fileName != "..",
            "file names come from MediaResourceId.safeFileName")
        var dir = mediaDirectory
        if let sub = location.directoryName { dir += "/" + sub }
        self.directory = dir
        self.fileName = fileName
        self.complete = dir + "/" + fileName
        self.partial = complete + Self.partialSuffix
        self.partialMeta = complete + Self.metaSuffix
    }

    public init(mediaDirectory: String, location: MediaStorageLocation, id: MediaResourceId) {
        self.init(mediaDirectory: mediaDirectory, location: location, fileName: id.safeFileName)
    }
}
