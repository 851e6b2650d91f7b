import ArgumentParser
import Foundation
import Jobs

/// `jobrun run <job>`: one run, as cron or a systemd timer starts it.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a job once (by name from --jobs-dir, or a job file path).",
        discussion: """
            With --scheduled (cron, a systemd timer), or when stdout is not a terminal, the run is \
            quiet like any unattended tool: a success, a skipped overlap, a missed start and a \
            suspended job print nothing; a failure prints one line on stderr (cron mails it). A dry \
            run still prints what it would do unless scheduled. -q makes a run on a terminal as \
            quiet; -v prints the summary and the log events anyway; --json prints the result.

            Examples:
              jobrun run sync-history --root /var/lib/jobrun --jobs-dir /etc/jobrun/jobs
              jobrun run time-based-cleanup --dry-run --json
              jobrun run upload-queue --scheduled        # the cron and timer line

            Exit codes: 0 ok (also a scheduled run of a suspended job), 1 job failed, 64 usage, \
            66 no jobs directory or data root, 69 cloud unavailable, 75 another run holds the lock, \
            78 bad configuration.
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var logging: LogOptions
    @Argument(help: "Job name or job file path.", completion: jobNameCompletion) var job: String
    @Flag(name: .customLong("dry-run"), help: "Report what would be done; change nothing (no metrics file, no new data root).") var dryRun = false
    @Flag(
        help: """
            Started by a timer or cron on the job's schedule: quiet unless it fails, a suspended job \
            (enabled: false, jobrun pause) is not run, and a catch-up run later than the job's \
            startingDeadline is skipped.
            """)
    var scheduled = false
    @Flag(name: .shortAndLong, help: "Print nothing unless the run fails (then one line on stderr).") var quiet = false
    @Flag(name: .shortAndLong, help: "Print the summary, and the log events on stderr, even with --scheduled or without a terminal.") var verbose = false

    /// What the line asks for, as plain values.
    var request: RunRequest {
        RunRequest(
            job: job, options: options.settings, logging: logging.settings, dryRun: dryRun, scheduled: scheduled, quiet: quiet, verbose: verbose)
    }

    func run() async throws { try await request.run() }
}
