import ArgumentParser
import Foundation
import Jobs

/// Where and how a job-running command reports: `--log-format`, `--log-level`, `--log-file`, each
/// with a `JOBRUN_LOG_*` environment variable, and `--pushgateway` (`JOBRUN_PUSHGATEWAY`) for its
/// metrics; the option wins.
struct LogOptions: ParsableArguments {
    @Option(name: .customLong("log-format"), help: "Log lines on stderr: json or text (default: $JOBRUN_LOG_FORMAT, else text on a terminal).")
    var format: String?

    @Option(name: .customLong("log-level"), help: "Lowest level logged: debug, info, notice, warning, error (default: $JOBRUN_LOG_LEVEL, else info).")
    var level: String?

    @Option(
        name: .customLong("log-file"),
        help: "Log file instead of <root>/logs/<process>-logs/<process>.log; - logs to stderr only (default: $JOBRUN_LOG_FILE).")
    var file: String?

    @Option(
        help:
            "Prometheus Pushgateway to push each run's metrics to as well, grouped by job and account; no credentials in the URL (default: $JOBRUN_PUSHGATEWAY)."
    )
    var pushgateway: String?

    /// What the sink needs, or an error naming the bad value: 64 for an option, 78 for a
    /// `JOBRUN_LOG_*` variable (configuration, as the same value in a file would be).
    struct Resolved {
        var level: LogLevel
        /// nil: the root's log directory; "-": no file.
        var file: String?
        /// An explicit stderr format, if one was asked for (option, variable or `--log-file -`).
        var console: LogSink.ConsoleMode?
        /// Where run metrics are pushed, if anywhere.
        var pushgateway: Pushgateway?
    }

    func resolve(environment: [String: String] = LaunchEnvironment.variables) throws -> Resolved {
        func chosen(_ option: String?, _ variable: String) -> (String, String)? {
            if let option, !option.isEmpty { return (option, "--" + variable.dropFirst("JOBRUN_".count).lowercased().replacingOccurrences(of: "_", with: "-")) }
            if let value = environment[variable], !value.isEmpty { return (value, "$" + variable) }
            return nil
        }
        var resolved = Resolved(level: .info, file: nil, console: nil)
        if let (text, source) = chosen(level, "JOBRUN_LOG_LEVEL") {
            guard let value = LogLevel(rawValue: text.lowercased()) else {
                throw fail(
                    source.hasPrefix("$") ? .config : .usage,
                    "\(source) '\(text)' is not a log level (one of \(LogLevel.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            resolved.level = value
        }
        if let (text, _) = chosen(file, "JOBRUN_LOG_FILE") { resolved.file = text }
        let tty = isatty(STDERR_FILENO) == 1
        if let (text, source) = chosen(format, "JOBRUN_LOG_FORMAT") {
            switch text.lowercased() {
            case "json": resolved.console = .json
            case "text": resolved.console = .human
            default: throw fail(source.hasPrefix("$") ? .config : .usage, "\(source) '\(text)' is not a log format (json or text)")
            }
        } else if resolved.file == "-" {
            resolved.console = tty ? .human : .json
        }
        if let (text, source) = chosen(pushgateway, "JOBRUN_PUSHGATEWAY") {
            // The value is not repeated: a URL given with a password by mistake must not be printed.
            if let problem = Pushgateway.problem(text) { throw fail(source.hasPrefix("$") ? .config : .usage, "\(source) \(problem)") }
            resolved.pushgateway = Pushgateway(text)
        }
        return resolved
    }
}
