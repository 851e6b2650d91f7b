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

    /// The values given, for the code that uses them.
    var settings: LogSettings { LogSettings(format: format, level: level, file: file, pushgateway: pushgateway) }
}
