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
    public init() throws {
        guard Self.started == 0 else {
            throw VipsError(operation: "start", detail: cvips_load_failure().map { String(cString: $0) } ?? Self.takeError())
        }
    }

    /// libvips loaded and started once per process, when the first generator is made (a
    /// `static let` initialiser runs once, thread-safely): a run that makes no representation
    /// never loads it.
    private static let started: Int32 = cvips_start()
    /// Decoding and encoding block: they run here, not on the cooperative pool.
    private static let queue = DispatchQueue(label: "jobrun.representations", attributes: .concurrent)

    public func generate(_ representation: any MediaRepresentation, from source: MediaResourceData) async throws -> Data {
        guard let photo = representation as? PhotoRepresentation else {
            throw VipsError(operation: "generate", detail: "unknown representation \(representation.uniqueId)")
        }
        return try await withCheckedThrowingContinuation { continuation in
            Self.queue.async { continuation.resume(with: Result { try Self.make(photo, path: source.path) }) }
        }
    }

    /// Decodes `path` into `photo`'s box, blurs it if asked, and encodes it as JPEG.
    public static func make(_ photo: PhotoRepresentation, path: String) throws -> Data {
        guard started == 0 else { throw VipsError(operation: "start", detail: cvips_load_failure().map { String(cString: $0) } ?? takeError()) }
        var image: OpaquePointer?
        guard cvips_thumbnail_file(path, Int32(photo.box), Int32(photo.box), &image) == 0, var current = image else {
            throw VipsError(operation: "decode", detail: takeError())
        }
        defer { cvips_unref(current) }
        if let sigma = photo.blurSigma {
            var blurred: OpaquePointer?
            guard cvips_gaussblur(current, sigma, &blurred) == 0, let b = blurred else {
                throw VipsError(operation: "blur", detail: takeError())
            }
            cvips_unref(current)
            current = b
        }
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        // The pipeline is lazy: decoding happens here, so a truncated file fails here.
        guard cvips_jpegsave_buffer(current, photo.quality, &buffer, &length) == 0, let buffer else {
            throw VipsError(operation: "decode", detail: takeError())
        }
        defer { cvips_free(buffer) }
        return Data(bytes: buffer, count: length)
    }

    /// libvips's error text, cleared, on one line.
    static func takeError() -> String {
        guard let text = cvips_take_error() else { return "unknown libvips error" }
        defer { cvips_free(text) }
        let lines = String(cString: text).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        return lines.isEmpty ? "unknown libvips error" : lines.joined(separator: "; ")
    }
}

/// A libvips failure: which step, and libvips's reason (never the photo's bytes).
public struct VipsError: Error, Sendable, CustomStringConvertible {
    public let operation: String
    public let detail: String
    public var description: String { "image \(operation) failed: \(detail)" }
}
