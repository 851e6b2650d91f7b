import Foundation

/// A representation derived from a resource (Telegram-iOS's `CachedMediaResourceRepresentation`):
/// an album thumbnail, a blurred placeholder, a display size. Its `uniqueId` names it among the
/// representations of one resource (it includes every parameter that changes the bytes, such as
/// `thumbnail-200x200`), and its `keepDuration` is the tier it is kept in.
public protocol MediaRepresentation: Sendable {
    var uniqueId: String { get }
    var keepDuration: MediaStorageTier { get }
}

/// Makes a representation's bytes from a complete resource (Telegram-iOS's
/// `fetchCachedResourceRepresentation`), injected as fetching is: MediaBox never decodes media.
/// The generator reads `source` (a complete file, held open for reading while it runs) and returns
/// the representation's bytes, or throws; a failure touches nothing in the MediaBox.
public protocol MediaRepresentationGenerator: Sendable {
    func generate(_ representation: any MediaRepresentation, from source: MediaResourceData) async throws -> Data
    /// Several representations of one source, in their order: a generator that can make them
    /// from one reading of the source (an image decoded once, each smaller size made from the
    /// larger one) does so here. The default makes each on its own.
    func generate(_ representations: [any MediaRepresentation], from source: MediaResourceData) async throws -> [Data]
}

extension MediaRepresentationGenerator {
    public func generate(_ representations: [any MediaRepresentation], from source: MediaResourceData) async throws -> [Data] {
        var out: [Data] = []
        for representation in representations { out.append(try await generate(representation, from: source)) }
        return out
    }
}

/// A representation found stored, or made and not yet stored (`MediaBox.makeRepresentations`).
public enum RepresentationInHand: Sendable {
    case stored(MediaResourceData)
    /// Made now: its bytes, with the id and info to store them under.
    case made(id: MediaResourceId, bytes: Data, info: MediaResourceStorageInfo)

    public var stored: MediaResourceData? {
        if case let .stored(data) = self { return data }
        return nil
    }

    public var made: (id: MediaResourceId, bytes: Data, info: MediaResourceStorageInfo)? {
        if case let .made(id, bytes, info) = self { return (id, bytes, info) }
        return nil
    }
}

/// Why a representation could not be made.
public enum MediaRepresentationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The resource is not complete in this MediaBox (representations are made from whole files).
    case resourceNotComplete(id: String)
    /// The generator produced no bytes.
    case emptyRepresentation(id: String, representation: String)

    public var description: String {
        switch self {
        case let .resourceNotComplete(id): return "resource \(id) is not complete in the media cache; fetch it first"
        case let .emptyRepresentation(id, rep): return "representation \(rep) of \(id) came out empty"
        }
    }
}
