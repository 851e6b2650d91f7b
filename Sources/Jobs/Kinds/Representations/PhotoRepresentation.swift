import MediaBox

/// The representations `generate-representations` makes of a photo, as the clients draw them.
public enum PhotoRepresentationKind: String, Sendable, CaseIterable, ParamWord {
    /// An album thumbnail that fits in a square (200×200 by default).
    case thumbnail
    /// A tiny blurred image (about 10×10) drawn while the photo loads.
    case placeholder
    /// A display size that fits in a larger square (1280×1280 by default).
    case display

    public var word: String { rawValue }
}

/// One representation with its box size and keep tier. The id names every parameter that
/// changes its bytes, so a new size is a new entry, never a stale one.
public struct PhotoRepresentation: MediaRepresentation, Hashable {
    public let kind: PhotoRepresentationKind
    /// Width and height of the box the image fits in.
    public let box: Int
    public let keepDuration: MediaStorageTier

    public init(kind: PhotoRepresentationKind, box: Int, keepDuration: MediaStorageTier) {
        self.kind = kind
        self.box = box
        self.keepDuration = keepDuration
    }

    public var uniqueId: String { "\(kind.rawValue)-\(box)x\(box)" }

    /// JPEG quality: the placeholder is blurred anyway.
    var quality: Int32 { kind == .placeholder ? 40 : 80 }
    /// Gaussian blur sigma (pixels of the small image), or nil for none.
    var blurSigma: Double? { kind == .placeholder ? 0.8 : nil }
}
