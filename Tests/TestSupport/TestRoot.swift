import Foundation
import Jobs
import Postbox

/// Which kind of data root and store the tests make: plaintext, or encrypted at rest when the
/// environment says `JOBRUN_TEST_ROOT=encrypted`. It is decided here only: the job-level
/// harness prepares every root it creates through `prepare`, and every store-level test that
/// opens a Postbox of its own opens it with `storeKey`. So one switch runs the same tests on
/// both kinds of root. A test about one kind in particular (converting a plaintext root, a key's
/// sources) names its kind explicitly instead.
public enum TestRoot {
    public enum Kind: String, Sendable, CaseIterable {
        case plaintext
        case encrypted
    }

    /// The variable that switches every test root to encrypted.
    public static let variable = "JOBRUN_TEST_ROOT"

    /// The kind this test process makes. An unknown value stops the process rather than
    /// silently testing plaintext roots.
    public static let kind: Kind = {
        guard let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty else { return .plaintext }
        guard let kind = Kind(rawValue: value) else {
            fatalError("\(variable)=\(value) is not a kind of root: use one of \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return kind
    }()

    /// The key every store a store-level test opens itself is opened with: one random key for
    /// the process when roots are encrypted, nil when they are plaintext.
    public static let storeKey: StoreKey? = kind == .encrypted ? StoreKey.random() : nil

    /// Makes `path` a data root of `kind`: for an encrypted one, what `jobrun init --encrypt`
    /// does (the root's directories and a random key in `<root>/keys/store.key`, 0600), so every
    /// process started on the root finds the key where an operator's would. A plaintext root is
    /// left for jobrun to create, as a first run does.
    public static func prepare(_ path: String, as kind: Kind = kind) {
        guard kind == .encrypted else { return }
        do {
            _ = try RootInitialization.run(root: DataRoot(path: path), encrypt: true, environment: [:])
        } catch {
            fatalError("cannot make the encrypted test root \(path): \(error.message)")
        }
    }

    /// Makes `path` another host's data root of the fleet whose first root is `first`: the same
    /// kind, and for an encrypted one the same key, copied into `<root>/keys/store.key` as an
    /// operator copies the key file to every host that shares a PostgreSQL server.
    public static func prepare(_ path: String, sharingKeyOf first: String) {
        let source = DataRoot(path: first).url.appendingPathComponent(RootKeySource.rootRelativePath).path
        guard FileManager.default.fileExists(atPath: source) else { return }
        let root = DataRoot(path: path)
        let target = root.url.appendingPathComponent(RootKeySource.rootRelativePath)
        do {
            _ = try RootInitialization.run(root: root, encrypt: false, environment: [:])
            try FileManager.default.createDirectory(
                at: target.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.copyItem(atPath: source, toPath: target.path)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: target.path)
        } catch {
            fatalError("cannot give the test root \(path) the key of \(first): \(error)")
        }
    }

    /// The key of the data root at `path` (its `keys/store.key`), or nil for a plaintext root.
    public static func key(ofRoot path: String) throws -> StoreKey? {
        let root = DataRoot(path: path)
        guard let source = RootKeySource.locate(root: root, environment: [:]), FileManager.default.fileExists(atPath: source.path) else {
            return nil
        }
        return try KeyFile.read(source, root: root)
    }
}
