import Foundation

/// The process's environment variables, read once: jobrun never changes its own environment,
/// and `ProcessInfo.environment` builds a new dictionary from `environ` on every call (a cron
/// run consulted it about seven times: log options, data root, cluster and object-storage
/// configuration, alerts, failpoints).
///
/// Code that must see a variable set while the process runs (tests toggling one with
/// `setenv`) reads it with `getenv` instead.
public enum LaunchEnvironment {
    public static let variables: [String: String] = ProcessInfo.processInfo.environment
}
