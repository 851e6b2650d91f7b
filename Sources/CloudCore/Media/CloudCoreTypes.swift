import Postbox

/// Registers every polymorphically stored CloudCore type with `PostboxTypeRegistry`, so
/// messages and peers decode their media. Call once at start-up (repeating it is harmless).
public enum CloudCoreTypes {
    public static func registerAll() {
        PostboxTypeRegistry.register(CloudPhotoMedia.self)
        PostboxTypeRegistry.register(CloudDocumentMedia.self)
        PostboxTypeRegistry.register(CloudSecretFileMedia.self)
        PostboxTypeRegistry.register(CloudAvatarMedia.self)
        PostboxTypeRegistry.register(CloudPhotoSize.self)
        PostboxTypeRegistry.register(CloudFileDescriptor.self)
    }
}
