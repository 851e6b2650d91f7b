import Foundation

/// Where the key of a data root comes from. Every process that opens the root (`run`,
/// `schedule`, `status`, `stats`, `enqueue-upload`, the demo) asks the same question the same
/// way, so they all open the root's stores with one key.
///
/// The first of these that applies wins:
/// 1. a systemd credential: `$CREDENTIALS_DIRECTORY/jobrun-store-key`, when the service
///    manager passed one (`LoadCredential=` or `LoadCredentialEncrypted=`);
/// 2. `JOBRUN_KEY_FILE`: the path of a key file, e.g. a Kubernetes Secret mounted as a file
///    (the variable names the file; the key itself is never in the environment);
/// 3. `<root>/keys/store.key`, the file `jobrun init --encrypt` creates.
///
/// None of them: the root is plaintext.
public enum RootKeySource: Sendable, Equatable, CustomStringConvertible {
    /// A systemd credential file.
    case credential(path: String)
    /// The file `JOBRUN_KEY_FILE` names.
    case configuredFile(path: String)
    /// `<root>/keys/store.key`.
    case rootFile(path: String)

    /// The credential's name in `LoadCredential=jobrun-store-key:…`.
    public static let credentialName = "jobrun-store-key"
    /// The variable systemd sets to the directory of a service's credentials.
    public static let credentialsDirectoryVariable = "CREDENTIALS_DIRECTORY"
    /// The variable naming a key file (its value is a path, never a key).
    public static let fileVariable = "JOBRUN_KEY_FILE"
    /// The key file's path below the data root.
    public static let rootRelativePath = "keys/store.key"

    /// The file the key is read from.
    public var path: String {
        switch self {
        case .credential(let path), .configuredFile(let path), .rootFile(let path): return path
        }
    }

    /// Whether the file lies below the data root (read through the root's confinement rules).
    public var isUnderRoot: Bool {
        if case .rootFile = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .credential(let path): return "systemd credential \(path)"
        case .configuredFile(let path): return "key file \(path) (\(Self.fileVariable))"
        case .rootFile(let path): return "key file \(path)"
        }
    }

    /// Where `root`'s key comes from, or nil when none is configured (a plaintext root). A
    /// credential counts only when its file exists; `JOBRUN_KEY_FILE` counts when it is set,
    /// whether or not its file exists (a missing file is then an error, not plaintext).
    public static func locate(root: DataRoot, environment: [String: String] = LaunchEnvironment.variables) -> RootKeySource? {
        if let directory = environment[credentialsDirectoryVariable], !directory.isEmpty {
            let path = (directory as NSString).appendingPathComponent(credentialName)
            if FileManager.default.fileExists(atPath: path) { return .credential(path: path) }
        }
        if let file = environment[fileVariable], !file.isEmpty {
            let absolute = file.hasPrefix("/") ? file : FileManager.default.currentDirectoryPath + "/" + file
            return .configuredFile(path: (absolute as NSString).standardizingPath)
        }
        let path = root.url.appendingPathComponent(rootRelativePath).path
        var st = stat()
        return lstat(path, &st) == 0 ? .rootFile(path: path) : nil
    }
}
