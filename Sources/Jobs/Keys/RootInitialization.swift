import Foundation
import Postbox

#if canImport(Glibc)
    import Glibc
#endif

/// `jobrun init`: creates a data root, and with `encrypt` its key, the first time — as the app
/// creates its Keychain key on first launch. Running it again changes nothing.
public enum RootInitialization {
    /// What `init` found or did about the key.
    public enum KeyOutcome: Sendable, Equatable {
        /// No key asked for: the root is plaintext.
        case none
        /// A new random key was written to this file.
        case created(path: String)
        /// The root already has its key from this source; nothing was written.
        case existing(RootKeySource)
    }

    /// Creates `root`'s directories and, with `encrypt`, a random key where `RootKeySource` looks
    /// first for a file: `JOBRUN_KEY_FILE` when set, else `<root>/keys/store.key`. A root that
    /// already holds plaintext stores is refused (exit 78): `jobrun encrypt` converts it.
    public static func run(
        root: DataRoot, encrypt: Bool, environment: [String: String] = LaunchEnvironment.variables
    ) throws(JobError) -> KeyOutcome {
        do { try root.createDirectories() } catch {
            throw StorageFailure.jobError(error, doing: "cannot create the data root")
        }
        guard encrypt else { return .none }
        let source = RootKeySource.locate(root: root, environment: environment)
        if let pending = RootKeyConversion.pendingKeyFile(root: root, source: source) {
            throw .config(
                "a key conversion of \(root.path) was interrupted (\(pending) exists): run the same `jobrun encrypt` or `jobrun rekey` again to finish it")
        }
        if let source, FileManager.default.fileExists(atPath: source.path) {
            _ = try KeyFile.read(source, root: root)  // a usable key, or the reason it is not
            return .existing(source)
        }
        for path in RootKeyConversion.storeFiles(root) {
            guard try RootKeyConversion.encryptionState(path) == false else { continue }
            throw .config("\(root.path) already holds plaintext stores (\(path)); `jobrun encrypt` encrypts them and creates the key")
        }
        let target = source ?? .rootFile(path: root.url.appendingPathComponent(RootKeySource.rootRelativePath).path)
        try RootKeyConversion.writeKeyFile(StoreKey.random(), at: target, root: root)
        return .created(path: target.path)
    }
}

/// Whether a data root is encrypted at rest, for `jobrun status`.
public struct RootEncryptionState: Sendable, Equatable {
    /// Where the key comes from, or nil when none is configured.
    public var keySource: RootKeySource?
    /// Stores of the root whose file is encrypted, and those in clear (SQLite stores only).
    public var encryptedStores: Int
    public var plaintextStores: Int

    /// True when the root's stores are (or will be created) encrypted.
    public var encrypted: Bool { keySource != nil || encryptedStores > 0 }

    /// "encrypted (key file /var/lib/jobrun/keys/store.key)", "not encrypted", …
    public var summary: String {
        switch (keySource, encryptedStores, plaintextStores) {
        case (let source?, _, 0): return "encrypted at rest (\(source))"
        case (let source?, _, let plain): return "encrypted at rest (\(source)), but \(plain) store(s) still in clear: run `jobrun encrypt`"
        case (nil, 0, _): return "not encrypted at rest (`jobrun encrypt` encrypts it)"
        case (nil, _, _): return "encrypted at rest, but no key is configured"
        }
    }

    /// The state of `root`, read without a key and without opening a store.
    public static func of(_ root: DataRoot, environment: [String: String] = LaunchEnvironment.variables) -> RootEncryptionState {
        var state = RootEncryptionState(keySource: RootKeySource.locate(root: root, environment: environment), encryptedStores: 0, plaintextStores: 0)
        for path in RootKeyConversion.storeFiles(root) {
            switch try? SqliteValueBox.isEncrypted(path: path) {
            case true?: state.encryptedStores += 1
            case false?: state.plaintextStores += 1
            default: break
            }
        }
        return state
    }
}
