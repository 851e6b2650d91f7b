import Foundation

/// The human `msg` of a log event: the one the event gave (`"msg": …`), else a sentence written
/// for its kind of event — `sync-history finished: succeeded in 1.24 s` — else its name and
/// first fields restated, so a journal or a container log reads without `jq`.
enum LogMessage {
    /// The `msg` the event gave, or the sentence written for its kind of event; nil for an
    /// event whose `msg` would only restate its name and first fields (`restated`), which a line
    /// for people shows anyway.
    static func worded(event: String, job: String?, fields: [String: LogValue]) -> String? {
        if case .string(let given)? = fields["msg"] { return given }
        let subject = job ?? "jobrun"
        func field(_ key: String) -> String? { shown(key, in: fields) }
        switch event {
        case "run.started":
            let dry = fields["dry_run"] == .bool(true) ? " (dry run)" : ""
            return "\(subject) started\(dry)" + (field("kind").map { ", kind \($0)" } ?? "")
        case "run.finished":
            let seconds = fields["duration_ms"].flatMap { value -> String? in
                if case .int(let ms) = value { return LogMessage.seconds(milliseconds: ms) }
                return nil
            }
            return "\(subject) finished: \(field("outcome") ?? "unknown")" + (seconds.map { " in \($0)" } ?? "")
                + (field("error").map { " — \($0)" } ?? "")
        case "run.skipped": return "\(subject) not started: " + (field("reason") ?? "another run holds its lock")
        case "run.retrying":
            return "\(subject) attempt \(field("attempt") ?? "?") failed, retrying in \(field("delay_ms") ?? "?") ms: \(field("error") ?? "")"
        case "run.refused", "run.failed": return "\(subject) could not run: " + (field("reason") ?? field("error") ?? event)
        case "run.abandoned": return "\(subject): closed run \(field("abandoned_run") ?? "?") left running by a process that died"
        case "scheduler.started": return "scheduler started (pid \(field("pid") ?? "?"))"
        case "scheduler.stopping": return "scheduler stopping, \(field("running") ?? "0") runs still active"
        case "scheduler.stopped": return "scheduler stopped after \(field("runs") ?? "0") runs"
        case "scheduler.skipped": return "\(subject) not started: " + (field("reason") ?? "still running")
        case "scheduler.missed": return "\(subject) missed its start at \(field("due") ?? "?") (older than startingDeadline)"
        case "scheduler.claimed": return "\(subject) account \(field("account") ?? "?"): claimed the fire at \(field("due") ?? "?")"
        case "scheduler.claimed_elsewhere":
            return "\(subject) account \(field("account") ?? "?"): the fire at \(field("due") ?? "?") is claimed by \(field("holder") ?? "another host")"
        case "scheduler.took_over":
            return
                "\(subject) account \(field("account") ?? "?"): took over the fire at \(field("due") ?? "?") from \(field("previous_holder") ?? "?"), whose lease ran out"
        case "scheduler.lease_lost":
            return "\(subject) account \(field("account") ?? "?"): the fire at \(field("due") ?? "?") was taken over by another host (the lease ran out)"
        case "scheduler.claim_failed": return "\(subject): cannot add or claim work in the cluster: \(field("error") ?? "?")"
        case "scheduler.listen_failed":
            return "cannot listen for new work in the cluster (\(field("error") ?? "?")); looking for it every \(field("poll_s") ?? "?") s instead"
        case "scheduler.listening": return "serving /metrics, /healthz and /readyz on \(field("address") ?? "?") (port \(field("port") ?? "?"))"
        case "metrics.pushed": return "\(subject): metrics pushed to \(field("endpoint") ?? "the Pushgateway")"
        case "alert.already_reported": return "\(subject): this failure was already reported by jobrun; not counted or pinged again"
        case "process.signal": return "received \(field("signal") ?? "a signal"), stopping at the next checkpoint"
        default: return nil
        }
    }

    /// `cleanup.report` of `idle-cleanup` with fields `a`, `b`: `idle-cleanup cleanup.report:
    /// a=1 b=2` (the first four fields by name).
    static func restated(event: String, job: String?, fields: [String: LogValue]) -> String {
        let details = fields.keys.sorted().prefix(4).compactMap { key in shown(key, in: fields).map { "\(key)=\($0)" } }
        return "\(job ?? "jobrun") \(event)" + (details.isEmpty ? "" : ": " + details.joined(separator: " "))
    }

    /// A field's value in words; nil when it is missing or null.
    private static func shown(_ key: String, in fields: [String: LogValue]) -> String? {
        guard let value = fields[key], value != .null else { return nil }
        return value.description
    }

    /// `1.24 s`: exactly what `String(format: "%.2f s", Double(ms) / 1000)` prints, without its
    /// `CVarArg` casts (each first cast of a type scans every conformance record of the
    /// process). printf rounds the double's exact binary value, so a duration ending in 5 ms
    /// rounds up when the double of `ms / 1000` lies above the decimal halfway point, and to
    /// the even hundredth when it is exactly on it (`0.375` prints `0.38`, `0.125` prints `0.12`).
    static func seconds(milliseconds: Int64) -> String {
        let ms = milliseconds.magnitude
        var hundredths = ms / 10
        switch ms % 10 {
        case 6...: hundredths += 1
        case 5:
            // value × 1000 − ms in one rounding (a fused multiply-add): its sign is exact.
            let excess = (-Double(ms)).addingProduct(Double(ms) / 1000, 1000)
            if excess > 0 || (excess == 0 && hundredths % 2 == 1) { hundredths += 1 }
        default: break
        }
        let fraction = hundredths % 100
        return "\(milliseconds < 0 ? "-" : "")\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction) s"
    }
}
