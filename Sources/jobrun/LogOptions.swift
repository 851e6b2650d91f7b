import ArgumentParser
import Foundation
import Jobs

/// Where and how a job-running command logs: `--log-format`, `--log-level`, `--log-file`, each
/// with a `JOBRUN_LOG_*` environment variable (the option wins).
struct LogOptions: ParsableArguments {
    @Option(name: .customLong("log-format"), help: "Log lines on stderr: json or text (default: $JOBRUN_LOG_FORMAT, else text on a terminal).")
    var format: String?

    @Option(name: .customLong("log-level"), help: "Lowest level logged: debug, info, notice, warning, error (default: $JOBRUN_LOG_LEVEL, else info).")
    var level: String?

    @Option(
        name: .customLong("log-file"),
        help: "Log file instead of <root>/logs/<process>-logs/<process>.log; - logs to stderr only (default: $JOBRUN_LOG_FILE).")
    var file: String?

    /// The values given, for the code that uses them.
    var settings: LogSettings { LogSettings(format: format, level: level, file: file) }
}
