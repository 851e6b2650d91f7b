import Foundation
import Postbox

/// The one place jobrun loads a data root's key: every store of the root (each account's
/// Postbox, the shared media tier's index, the values a fleet keeps in PostgreSQL) is opened
/// with what this returns.
public enum RootKey {
    /// The key of `root` from the first source that applies (`RootKeySource`), or nil when none
    /// is configured. A configured key that cannot be used (missing, unreadable, readable by
    /// others, not a key) is a `JobError.config` (exit 78) naming the file, never its content;
    /// so is a root that an interrupted `jobrun encrypt` or `jobrun rekey` left half converted.
    ///
    /// The process then holds the root's stores lock shared for as long as it lives
    /// (`RootStoresLock`): a conversion waits for it to end. A `reader` (`status`, `stats`)
    /// creates no lock file for that.
    public static func load(
        root: DataRoot, reader: Bool = false, environment: [String: String] = LaunchEnvironment.variables
    ) throws(JobError) -> StoreKey? {
        try RootStoresLock.holdShared(root, create: !reader)
        let source = RootKeySource.locate(root: root, environment: environment)
        if let pending = RootKeyConversion.pendingKeyFile(root: root, source: source) {
            throw .config(
                "a key conversion of \(root.path) was interrupted (\(pending) exists): run the same `jobrun encrypt` or `jobrun rekey` again to finish it"
            )
        }
        guard let source else { return nil }
        return try KeyFile.read(source, root: root)
    }
}
