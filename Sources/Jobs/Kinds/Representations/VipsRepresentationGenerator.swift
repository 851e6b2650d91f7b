import CVips
import Foundation
import MediaBox

/// Makes photo representations with libvips: shrink-on-load decoding (a JPEG is decoded at the
/// smallest scale that still covers the box, so a 2560×1920 photo never becomes 15 MB of
/// pixels), streaming from the file, and no operation cache, so memory stays flat however many
/// photos a run makes. `vipsthumbnail` is the same code path for one size. The representations
/// of a photo come from one decode: each smaller one is resized from the larger one in memory.
///
/// A file libvips cannot decode (not an image, corrupt, truncated) fails with libvips's own
/// reason; the caller fails that photo alone.
public struct VipsRepresentationGenerator: MediaRepresentationGenerator {
    public init() throws {
        guard Self.started == 0 else { throw VipsError(operation: "start", detail: Self.takeError()) }
    }

    /// libvips started once per process (a `static let` initialiser runs once, thread-safely).
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

    /// Several representations from one decode: see `make(_:path:)`.
    public func generate(_ representations: [any MediaRepresentation], from source: MediaResourceData) async throws -> [Data] {
        let photos = try representations.map { representation -> PhotoRepresentation in
            guard let photo = representation as? PhotoRepresentation else {
                throw VipsError(operation: "generate", detail: "unknown representation \(representation.uniqueId)")
            }
            return photo
        }
        return try await withCheckedThrowingContinuation { continuation in
            Self.queue.async { continuation.resume(with: Result { try Self.make(photos, path: source.path) }) }
        }
    }

    /// Decodes `path` into `photo`'s box, blurs it if asked, and encodes it as JPEG.
    public static func make(_ photo: PhotoRepresentation, path: String) throws -> Data {
        let image = try decode(path, box: photo.box)
        defer { cvips_unref(image) }
        // The pipeline is lazy: decoding happens in the encoding, so a truncated file fails there.
        return try encode(image, photo)
    }

    /// Several representations of the photo at `path`, in their order, from one decode: the
    /// file is decoded once, shrunk on load to the largest box asked for, and each smaller
    /// representation is resized from the next larger one in memory (the placeholder from the
    /// thumbnail), never from the file again.
    public static func make(_ photos: [PhotoRepresentation], path: String) throws -> [Data] {
        if photos.count == 1 { return [try make(photos[0], path: path)] }
        let order = photos.indices.sorted { photos[$0].box > photos[$1].box }
        guard let largest = order.first else { return [] }
        let lazy = try decode(path, box: photos[largest].box)
        // The decode runs here, once; a truncated file fails here.
        let decoded = cvips_copy_memory(lazy)
        cvips_unref(lazy)
        guard var current = decoded else { throw VipsError(operation: "decode", detail: takeError()) }
        defer { cvips_unref(current) }
        var out = [Data](repeating: Data(), count: photos.count)
        for (step, index) in order.enumerated() {
            let photo = photos[index]
            if step > 0 {
                var resized: OpaquePointer?
                guard cvips_thumbnail_image(current, Int32(photo.box), Int32(photo.box), &resized) == 0, let lazyResized = resized else {
                    throw VipsError(operation: "resize", detail: takeError())
                }
                // Held in memory only when a smaller one is made from it.
                let next = step + 1 < order.count ? cvips_copy_memory(lazyResized) : lazyResized
                if step + 1 < order.count { cvips_unref(lazyResized) }
                guard let next else { throw VipsError(operation: "resize", detail: takeError()) }
                cvips_unref(current)
                current = next
            }
            out[index] = try encode(current, photo)
        }
        return out
    }

    /// The file at `path` as a lazy image that fits in `box` (shrink-on-load).
    private static func decode(_ path: String, box: Int) throws -> OpaquePointer {
        var image: OpaquePointer?
        guard cvips_thumbnail_file(path, Int32(box), Int32(box), &image) == 0, let image else {
            throw VipsError(operation: "decode", detail: takeError())
        }
        return image
    }

    /// `image` blurred if `photo` asks for it, encoded as JPEG. `image` stays the caller's.
    private static func encode(_ image: OpaquePointer, _ photo: PhotoRepresentation) throws -> Data {
        var blurred: OpaquePointer?
        if let sigma = photo.blurSigma {
            guard cvips_gaussblur(image, sigma, &blurred) == 0, blurred != nil else {
                throw VipsError(operation: "blur", detail: takeError())
            }
        }
        defer { if let blurred { cvips_unref(blurred) } }
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        guard cvips_jpegsave_buffer(blurred ?? image, photo.quality, &buffer, &length) == 0, let buffer else {
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
