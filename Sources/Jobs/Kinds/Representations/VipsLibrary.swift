import CVips
import Foundation

/// libvips, loaded into the process the first time it makes a representation, and the calls
/// jobrun makes into it.
///
/// The `jobrun` binary does not link libvips: libvips brings some 70 shared libraries (glib,
/// cairo, pango, X11, OpenEXR, HDF5, GnuTLS, Kerberos…), and loading and relocating them at
/// start-up cost every command about 17 ms and 12.5 MiB, twice the time of `--version` (see
/// docs/performance.md). It is opened with `dlopen` instead (`RTLD_LOCAL`, so its
/// symbols never resolve anyone else's) and its entry points are looked up with `dlsym`; glib's
/// `g_object_unref` and `g_free` resolve through its dependencies. The C wrappers in `CVips`
/// take each resolved address and call it as libvips declares it.
///
/// A process without libvips fails `generate-representations` alone, with `notInstalled`'s
/// message; every other kind runs as before.
struct VipsLibrary: @unchecked Sendable {  // the addresses of code in a library never unloaded
    /// The shared object libvips 8 installs.
    static let soname = "libvips.so.42"
    /// The Debian package that installs it.
    static let package = "libvips42"

    /// libvips, loaded and started once per process on first use (a `static let` initialiser runs
    /// once, thread-safely): the result, a failure included, is kept for the process's life.
    static let shared = Result { () throws(JobError) in try load(soname) }

    private let thumbnail, thumbnailImage, copyMemory, imageWidth, imageHeight, imageBands, imageFormat, imageData: UnsafeRawPointer
    private let imageFromMemory, shrink, gaussblur: UnsafeRawPointer
    private let jpegsaveBuffer, errorBufferCopy, objectUnref, free: UnsafeRawPointer

    /// Opens `soname`, resolves the entry points jobrun uses and starts libvips. A library that
    /// cannot be opened, lacks one of them or does not start is `notInstalled` (exit 78): a
    /// configuration of the host that a retry does not change.
    static func load(_ soname: String) throws(JobError) -> VipsLibrary {
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else { throw notInstalled(soname, reason: dlErrorText()) }
        func symbol(_ name: String) throws(JobError) -> UnsafeRawPointer {
            guard let address = dlsym(handle, name) else { throw notInstalled(soname, reason: dlErrorText()) }
            return UnsafeRawPointer(address)
        }
        let library = VipsLibrary(
            thumbnail: try symbol("vips_thumbnail"), thumbnailImage: try symbol("vips_thumbnail_image"),
            copyMemory: try symbol("vips_image_copy_memory"), imageWidth: try symbol("vips_image_get_width"), imageHeight: try symbol("vips_image_get_height"),
            imageBands: try symbol("vips_image_get_bands"), imageFormat: try symbol("vips_image_get_format"),
            imageData: try symbol("vips_image_get_data"), imageFromMemory: try symbol("vips_image_new_from_memory_copy"),
            shrink: try symbol("vips_shrink"), gaussblur: try symbol("vips_gaussblur"),
            jpegsaveBuffer: try symbol("vips_jpegsave_buffer"), errorBufferCopy: try symbol("vips_error_buffer_copy"),
            objectUnref: try symbol("g_object_unref"), free: try symbol("g_free"))
        let started = cvips_start(
            try symbol("vips_init"), try symbol("vips_cache_set_max"), try symbol("vips_cache_set_max_mem"),
            try symbol("vips_concurrency_set"))
        guard started == 0 else { throw notInstalled(soname, reason: "vips_init failed: \(library.takeError())") }
        return library
    }

    /// Why `generate-representations` cannot run here, with the package that fixes it.
    static func notInstalled(_ soname: String, reason: String) -> JobError {
        .config(
            "generate-representations needs libvips (Debian package \(package)), which this host cannot load: "
                + "\(soname): \(reason)")
    }

    private static func dlErrorText() -> String {
        guard let text = dlerror() else { return "unknown dynamic loader error" }
        return String(cString: text)
    }

    /// The file at `path` as a lazy image that fits in `width`×`height` (shrink-on-load), or nil
    /// (`takeError` says why).
    func thumbnail(file path: String, width: Int, height: Int) -> OpaquePointer? {
        var image: OpaquePointer?
        guard cvips_thumbnail_file(thumbnail, path, Int32(width), Int32(height), &image) == 0 else { return nil }
        return image
    }

    /// `image` resized to fit in `width`×`height`, never enlarged, as a lazy image, or nil: for
    /// an image already in memory.
    func thumbnail(image: OpaquePointer, width: Int, height: Int) -> OpaquePointer? {
        var resized: OpaquePointer?
        guard cvips_thumbnail_image(thumbnailImage, image, Int32(width), Int32(height), &resized) == 0 else { return nil }
        return resized
    }

    /// The lazy pipeline behind `image` run once into memory (a decode happens, and fails, here),
    /// so several outputs can be made from it; nil on failure.
    func copyMemory(_ image: OpaquePointer) -> OpaquePointer? { cvips_copy_memory(copyMemory, image) }

    /// `image` shrunk `factor` times on both axes with a box filter, as a lazy image, or nil.
    func shrink(_ image: OpaquePointer, by factor: Int) -> OpaquePointer? {
        var shrunk: OpaquePointer?
        guard cvips_shrink(shrink, image, Int32(factor), &shrunk) == 0 else { return nil }
        return shrunk
    }

    /// Width and height of `image`.
    func size(_ image: OpaquePointer) -> (width: Int, height: Int) {
        (Int(cvips_image_width(imageWidth, image)), Int(cvips_image_height(imageHeight, image)))
    }

    /// A copy of the 8-bit pixels of `image`, an image in memory (`copyMemory`'s), as band-packed
    /// rows; nil for any other band format.
    func ucharPixels(_ image: OpaquePointer) -> UcharPixels? {
        guard cvips_image_format(imageFormat, image) == CVIPS_FORMAT_UCHAR, let data = cvips_image_data(imageData, image) else { return nil }
        let (width, height) = size(image)
        let bands = Int(cvips_image_bands(imageBands, image))
        let bytes = [UInt8](UnsafeRawBufferPointer(start: data, count: width * height * bands))
        return UcharPixels(bytes: bytes, width: width, height: height, bands: bands)
    }

    /// A new image in memory holding a copy of `pixels`, or nil.
    func image(_ pixels: UcharPixels) -> OpaquePointer? {
        pixels.bytes.withUnsafeBytes { raw in
            cvips_image_from_uchar_pixels(
                imageFromMemory, raw.baseAddress, raw.count, Int32(pixels.width), Int32(pixels.height), Int32(pixels.bands))
        }
    }

    /// `image` with libvips's exact Gaussian blur of `sigma` (integer convolution), or nil: the
    /// reference for `GaussianBlur`.
    func gaussblur(_ image: OpaquePointer, sigma: Double) -> OpaquePointer? {
        var blurred: OpaquePointer?
        guard cvips_gaussblur(gaussblur, image, sigma, &blurred) == 0 else { return nil }
        return blurred
    }

    /// `image` as a baseline JPEG of `quality` without metadata, or nil. A lazy pipeline runs
    /// here, so a decode fails here.
    func jpeg(_ image: OpaquePointer, quality: Int32) -> Data? {
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        guard cvips_jpegsave_buffer(jpegsaveBuffer, image, quality, &buffer, &length) == 0, let buffer else { return nil }
        defer { cvips_free(free, buffer) }
        return Data(bytes: buffer, count: length)
    }

    /// Drops a reference to `image`.
    func unref(_ image: OpaquePointer) { cvips_unref(objectUnref, image) }

    /// libvips's error text, cleared, on one line.
    func takeError() -> String {
        guard let text = cvips_take_error(errorBufferCopy) else { return "unknown libvips error" }
        defer { cvips_free(free, text) }
        let lines = String(cString: text).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        return lines.isEmpty ? "unknown libvips error" : lines.joined(separator: "; ")
    }
}
