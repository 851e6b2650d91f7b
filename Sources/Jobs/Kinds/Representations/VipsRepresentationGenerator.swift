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

    /// Several representations from one decode: see `make(_:path:_:)`.
    public func generate(_ representations: [any MediaRepresentation], from source: MediaResourceData) async throws -> [Data] {
        let photos = try representations.map { representation -> PhotoRepresentation in
            guard let photo = representation as? PhotoRepresentation else {
                throw VipsError(operation: "generate", detail: "unknown representation \(representation.uniqueId)")
            }
            return photo
        }
        let vips = try library()
        return try await withCheckedThrowingContinuation { continuation in
            Self.queue.async { continuation.resume(with: Result { try Self.make(photos, path: source.path, vips) }) }
        }
    }

    /// Decodes `path` into `photo`'s box, blurs it if asked, and encodes it as JPEG.
    static func make(_ photo: PhotoRepresentation, path: String, _ vips: VipsLibrary) throws -> Data {
        let image = try decode(path, box: photo.box, vips)
        defer { vips.unref(image) }
        // The pipeline is lazy: decoding happens in the encoding, so a truncated file fails there.
        return try encode(image, photo, vips)
    }

    /// Several representations of the photo at `path`, in their order, from one decode: the
    /// file is decoded once, shrunk on load to the largest box asked for, and each smaller
    /// representation is resized from the next larger one in memory (the placeholder from the
    /// thumbnail), never from the file again.
    static func make(_ photos: [PhotoRepresentation], path: String, _ vips: VipsLibrary) throws -> [Data] {
        if photos.count == 1 { return [try make(photos[0], path: path, vips)] }
        let order = photos.indices.sorted { photos[$0].box > photos[$1].box }
        guard let largest = order.first else { return [] }
        let lazy = try decode(path, box: photos[largest].box, vips)
        // The decode runs here, once; a truncated file fails here.
        let decoded = vips.copyMemory(lazy)
        vips.unref(lazy)
        guard var current = decoded else { throw VipsError(operation: "decode", detail: vips.takeError()) }
        defer { vips.unref(current) }
        var out = [Data](repeating: Data(), count: photos.count)
        for (step, index) in order.enumerated() {
            let photo = photos[index]
            if step > 0 {
                guard let lazyResized = resize(current, into: photo, vips) else {
                    throw VipsError(operation: "resize", detail: vips.takeError())
                }
                // Held in memory only when a smaller one is made from it.
                let next = step + 1 < order.count ? vips.copyMemory(lazyResized) : lazyResized
                if step + 1 < order.count { vips.unref(lazyResized) }
                guard let next else { throw VipsError(operation: "resize", detail: vips.takeError()) }
                vips.unref(current)
                current = next
            }
            out[index] = try encode(current, photo, vips)
        }
        return out
    }

    /// `image` (in memory) resized to fit in `photo`'s box, as a lazy image, or nil. A
    /// placeholder is shrunk by a whole factor with a box filter: it is blurred anyway, and a
    /// resize would compile a vector program for each photo (libvips's reduce and integer
    /// convolution do), which costs more than the whole placeholder. Other kinds are resized
    /// (Lanczos) to touch their box exactly.
    private static func resize(_ image: OpaquePointer, into photo: PhotoRepresentation, _ vips: VipsLibrary) -> OpaquePointer? {
        guard photo.kind == .placeholder else { return vips.thumbnail(image: image, width: photo.box, height: photo.box) }
        let (width, height) = vips.size(image)
        // The smallest whole factor that fits the box: ceil(side / box), never below 1.
        let factor = max(1, (max(width, height) + photo.box - 1) / photo.box)
        return vips.shrink(image, by: factor)
    }

    /// The file at `path` as a lazy image that fits in `box` (shrink-on-load).
    private static func decode(_ path: String, box: Int, _ vips: VipsLibrary) throws -> OpaquePointer {
        guard let image = vips.thumbnail(file: path, width: box, height: box) else {
            throw VipsError(operation: "decode", detail: vips.takeError())
        }
        return image
    }

    /// `image` blurred if `photo` asks for it, encoded as JPEG. `image` stays the caller's.
    private static func encode(_ image: OpaquePointer, _ photo: PhotoRepresentation, _ vips: VipsLibrary) throws -> Data {
        guard let sigma = photo.blurSigma else { return try jpeg(image, photo, vips) }
        // A placeholder's few pixels are blurred here (`GaussianBlur`), read from the image in
        // memory (a lazy one runs here, so a decode fails here) into a new image.
        guard let source = vips.copyMemory(image) else { throw VipsError(operation: "decode", detail: vips.takeError()) }
        defer { vips.unref(source) }
        guard let pixels = vips.ucharPixels(source) else { throw VipsError(operation: "blur", detail: "not an 8-bit image") }
        guard let blurred = vips.image(GaussianBlur(sigma: sigma).apply(pixels)) else {
            throw VipsError(operation: "blur", detail: vips.takeError())
        }
        defer { vips.unref(blurred) }
        return try jpeg(blurred, photo, vips)
    }

    /// `image` encoded as JPEG at `photo`'s quality.
    private static func jpeg(_ image: OpaquePointer, _ photo: PhotoRepresentation, _ vips: VipsLibrary) throws -> Data {
        guard let data = vips.jpeg(image, quality: photo.quality) else {
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
