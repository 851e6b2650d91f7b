import Foundation

/// Named points in the runner where tests (and operators reproducing a bug) can inject a delay
/// or a crash through `JOBRUN_FAILPOINTS`, e.g. `after-lock=sleep(3000);after-start-record=kill`.
/// Points: `after-lock` (run lock taken, nothing recorded yet), `after-start-record` (the run is
/// recorded as running in Postbox, the kind has not started); and in `jobrun encrypt` / `jobrun
/// rekey`: `convert-after-next-key` (the new key written beside the old), `convert-after-export`
/// (a store's converted copy written, not yet renamed), `convert-after-rename` (one store
/// converted), `convert-before-key-install` (every store converted, the old key still in place).
///
/// Actions: `sleep(ms)` (cancellable), `exit(code)`, `kill` (SIGKILL self: a crash with no
/// cleanup at all). Unset, a failpoint costs one dictionary lookup.
public enum Failpoints {
    static let table: [String: String] = {
        guard let spec = LaunchEnvironment.variables["JOBRUN_FAILPOINTS"] else { return [:] }
        var out: [String: String] = [:]
        for item in spec.split(separator: ";") {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2 { out[parts[0]] = parts[1] }
        }
        return out
    }()

    /// Performs the action configured for `name`, if any.
    public static func hit(_ name: String) async throws {
        guard let action = table[name] else { return }
        if action == "kill" { kill(getpid(), SIGKILL) }
        if let ms = argument(action, "sleep") { try await Task.sleep(for: .milliseconds(ms)) }
        if let code = argument(action, "exit") { exit(Int32(code)) }
    }

    /// `hit` for synchronous code (the key conversion): `sleep(ms)` blocks the thread.
    public static func hitBlocking(_ name: String) {
        guard let action = table[name] else { return }
        if action == "kill" { kill(getpid(), SIGKILL) }
        if let ms = argument(action, "sleep") { usleep(useconds_t(ms) * 1000) }
        if let code = argument(action, "exit") { exit(Int32(code)) }
    }

    private static func argument(_ action: String, _ name: String) -> Int? {
        guard action.hasPrefix(name + "("), action.hasSuffix(")") else { return nil }
        return Int(action.dropFirst(name.count + 1).dropLast())
    }
}
