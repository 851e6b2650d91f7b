import Foundation

/// The process's environment variables, read once: jobrun never changes its own environment,
/// and `ProcessInfo.environment` builds a new dictionary from `environ` on every call (a cron
/// run consulted it about seven times: log options, data root, cluster and object-storage
/// configuration, alerts, failpoints).
///
/// Code that must see a variable set while the process runs (tests toggling one with
/// `setenv`) reads it with `getenv` instead.
///
/// Read from `environ` directly rather than through `ProcessInfo`, whose first use costs a cron
/// run a quarter of a millisecond. Where a name appears twice, the first wins, as for `getenv`.
public enum LaunchEnvironment {
    public static let variables: [String: String] = {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.utf8.firstIndex(of: UInt8(ascii: "=")) {
                let name = String(text[..<equals])
                if result[name] == nil { result[name] = String(text[text.utf8.index(after: equals)...]) }
            }
            entry += 1
        }
        return result
    }()
}
