import Foundation
import Synchronization

/// A fresh directory under the system temp dir, removed when the value is deinitialised or,
/// at the latest, when the process exits.
///
/// The exit is the case that matters for tests: XCTest on Linux keeps every test case object
/// (and so every fixture it holds in a property) alive until the process ends, and a process
/// that ends runs no deinitialisers. Without the exit hook each run of the suite would leave
/// its stores, uploads and PostgreSQL data folders behind in the temp dir.
public final class TemporaryDirectory: @unchecked Sendable {
    public let url: URL
    public var path: String { url.path }

    public init(prefix: String = "jobrun-test") {
        let base = FileManager.default.temporaryDirectory
        url = base.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        Self.removeAtExit(url.path)
    }

    /// A path inside the directory.
    public func file(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit {
        try? FileManager.default.removeItem(at: url)
        Self.leftovers.withLock { _ = $0.remove(url.path) }
    }

    /// Removes the directory at `path` when the process exits normally, unless it is gone by
    /// then. For folders a test creates without a `TemporaryDirectory` that owns them.
    public static func removeAtExit(_ path: String) {
        _ = exitHookInstalled
        leftovers.withLock { _ = $0.insert(path) }
    }

    private static let leftovers = Mutex<Set<String>>([])

    /// Handlers run in the reverse order of their installation, so one installed later (a shared
    /// server's stop) runs before the folders it uses are removed.
    private static let exitHookInstalled: Void = {
        atexit {
            for path in TemporaryDirectory.leftovers.withLock({ $0 }) {
                try? FileManager.default.removeItem(atPath: path)
            }
        }
    }()
}
