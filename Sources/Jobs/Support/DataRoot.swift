import Foundation
import Postbox

/// The data-root layout of DESIGN §3: one directory holds every account's Postbox and MediaBox,
/// logs, temp and metrics. Directories are created 0700.
public struct DataRoot: Sendable, Hashable {
    /// Environment variable naming the root when `--root` is not given.
    public static let environmentVariable = "JOBRUN_ROOT"
    /// Root used when neither `--root` nor `JOBRUN_ROOT` is set (relative to the working directory).
    public static let defaultPath = "./data"

    public let url: URL

    public init(url: URL) { self.url = url.standardizedFileURL }
    public init(path: String) { self.init(url: URL(fileURLWithPath: path)) }

    /// `--root` wins, then `JOBRUN_ROOT`, then `./data`; relative paths are resolved against
    /// `currentDirectory` so units and cron lines may use absolute paths only.
    public static func resolve(explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment,
                               currentDirectory: String = FileManager.default.currentDirectoryPath) -> DataRoot {
        let chosen = [explicit, environment[environmentVariable]].compactMap { $0 }.first { !$0.isEmpty } ?? defaultPath
        if chosen.hasPrefix("/") { return DataRoot(path: chosen) }
        return DataRoot(url: URL(fileURLWithPath: currentDirectory).appendingPathComponent(chosen))
    }

    public var path: String { url.path }

    /// `accounts-metadata/`: which accounts exist (SQLite).
    public var accountsMetadata: URL { url.appendingPathComponent("accounts-metadata", isDirectory: true) }
    /// `logs/`: one `<process>-logs/` directory per process type.
    public var logs: URL { url.appendingPathComponent("logs", isDirectory: true) }
    /// `logs/<process>-logs/`.
    public func logs(process: String) -> URL { logs.appendingPathComponent("\(process)-logs", isDirectory: true) }
    /// `temp/`.
    public var temp: URL { url.appendingPathComponent("temp", isDirectory: true) }
    /// `temp/<process>/`: parent of the per-launch TempBox directories.
    public func temp(process: String) -> URL { temp.appendingPathComponent(process, isDirectory: true) }
    /// `metrics/`: Prometheus textfile-collector output.
    public var metrics: URL { url.appendingPathComponent("metrics", isDirectory: true) }

    /// Paths of one account.
    public func account(_ id: Int64) -> AccountPaths { AccountPaths(directory: url.appendingPathComponent("account-\(id)", isDirectory: true)) }

    /// Creates the root and its shared directories (0700). Safe to call from several processes.
    public func createDirectories(accounts: [Int64] = []) throws {
        for directory in [url, accountsMetadata, logs, temp, metrics] { try Self.makeDirectory(directory) }
        for id in accounts { try account(id).createDirectories() }
    }

    /// `mkdir -p` with mode 0700 for every directory it creates (existing ones are left alone).
    public static func makeDirectory(_ directory: URL, mode: mode_t = 0o700) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) {
            if isDirectory.boolValue { return }
            throw CocoaError(.fileWriteFileExists, userInfo: [NSFilePathErrorKey: directory.path])
        }
        let parent = directory.deletingLastPathComponent()
        if parent.path != directory.path { try makeDirectory(parent, mode: mode) }
        if mkdir(directory.path, mode) != 0, errno != EEXIST {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO, userInfo: [NSFilePathErrorKey: directory.path])
        }
        chmod(directory.path, mode) // umask may have removed bits; 0700 is what we want anyway
    }
}

/// Paths of one account inside the data root (`account-<id>/`).
public struct AccountPaths: Sendable, Hashable {
    public let directory: URL
    /// `config.yaml`: datacenter base URLs, CDN policy, credentials file path.
    public var config: URL { directory.appendingPathComponent("config.yaml") }
    /// `postbox/`.
    public var postbox: URL { directory.appendingPathComponent("postbox", isDirectory: true) }
    /// `postbox/db/`: Postbox SQLite (WAL).
    public var postboxDatabase: URL { postbox.appendingPathComponent("db", isDirectory: true) }
    /// `postbox/db/db.sqlite`: the Postbox database file.
    public var postboxFile: URL { postboxDatabase.appendingPathComponent(Postbox.databaseFileName) }
    /// `postbox/media/`: MediaBox.
    public var media: URL { postbox.appendingPathComponent("media", isDirectory: true) }
    /// `uploads/`: staged files of the upload queue.
    public var uploads: URL { directory.appendingPathComponent("uploads", isDirectory: true) }

    public func createDirectories() throws {
        for dir in [directory, postbox, postboxDatabase, media] { try DataRoot.makeDirectory(dir) }
    }
}
