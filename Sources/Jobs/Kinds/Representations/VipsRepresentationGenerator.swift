import CVips
import Foundation
import MediaBox

/// Makes photo representations with libvips: shrink-on-load decoding (a JPEG is decoded at the
/// smallest scale that still covers the box, so a 2560×1920 photo never becomes 15 MB of
/// pixels), streaming from the file, and no operation cache, so memory stays flat however many
/// photos a run makes. `vipsthumbnail` is the same code path.
///
/// A file libvips cannot decode (not an image, corrupt, truncated) fails with libvips's own
/// reason; the caller fails that photo alone.
public struct VipsRepresentationGenerator: MediaRepresentationGenerator {
    /// libvips, loaded the first time a representation is made (`VipsLibrary.shared`), so a run
    /// that finds every representation present never loads it.
    private let library: @Sendable () throws(JobError) -> VipsLibrary

    public init() { self.init(library: { () throws(JobError) in try VipsLibrary.shared.get() }) }

    init(library: @escaping @Sendable () throws(JobError) -> VipsLibrary) { self.library = library }

    /// Decoding and encoding block: they run here, not on the cooperative pool.
    private static let queue = DispatchQueue(label: "jobrun.representations", attributes: .concurrent)

    public func generate(_ representation: any MediaRepresentation, from source: MediaResourceData) async throws -> Data {
        guard let photo = representation as? PhotoRepresentation else {
            throw VipsError(operation: "generate", detail: "unknown representation \(representation.uniqueId)")
        }
        let vips = try library()
        return try await withCheckedThrowingContinuation { continuation in
            Self.queue.async { continuation.resume(with: Result { try Self.make(photo, path: source.path, vips) }) }
        }
    }

    /// Decodes `path` into `photo`'s box, blurs it if asked, and encodes it as JPEG.
    static func make(_ photo: PhotoRepresentation, path: String, _ vips: VipsLibrary) throws -> Data {
        guard var current = vips.thumbnail(file: path, width: photo.box, height: photo.box) else {
            throw VipsError(operation: "decode", detail: vips.takeError())
        }
        defer { vips.unref(current) }
        if let sigma = photo.blurSigma {
            guard let blurred = vips.gaussblur(current, sigma: sigma) else {
                throw VipsError(operation: "blur", detail: vips.takeError())
            }
            vips.unref(current)
            current = blurred
        }
        // The pipeline is lazy: decoding happens here, so a truncated file fails here.
        guard let data = vips.jpeg(current, quality: photo.quality) else {
            throw VipsError(operation: "decode", detail: vips.takeError())
        }
        return data
    }
}

/// A libvips failure: which step, and libvips's reason (never the photo's bytes).
public struct VipsError: Error, Sendable, CustomStringConvertible {
    public let operation: String
    public let detail: String
    public var description: String { "image \(operation) failed: \(detail)" }
}
