import Foundation

/// Media attached to a message or a peer (photo, document, sticker, …). Concrete types live in
/// CloudCore and are registered with `PostboxTypeRegistry`, so messages decode them
/// polymorphically; a type this build does not know is skipped, not an error.
public protocol Media: PostboxCoding {
    var id: MediaId? { get }
}
