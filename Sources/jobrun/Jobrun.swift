import ArgumentParser
import Foundation
import Jobs

/// `jobrun`: batch sync and cache-maintenance jobs over a Telegram-style Postbox and MediaBox.
@main
struct Jobrun: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobrun",
        abstract: "Batch sync and cache-maintenance jobs over a shared Postbox and MediaBox.",
        discussion:
            "Exit codes (sysexits): 0 ok, 1 job failed, 64 usage, 66 input missing, 69 cloud unavailable, 73 data root cannot be created or written, 74 I/O error (disk full), 75 temporary (lock held), 78 bad configuration or unsafe data root.",
        version: BuildInfo.line,
        subcommands: [
            RunCommand.self, ValidateCommand.self, ListCommand.self, StatusCommand.self, StatsCommand.self, ScheduleCommand.self, UnitsCommand.self,
            PauseCommand.self, ResumeCommand.self, NotifyFailureCommand.self,
            DemoCommand.self, EnqueueUploadCommand.self, InitCommand.self, EncryptCommand.self, RekeyCommand.self,
        ]
    )

    /// Parses and runs the command; a first argument that names no subcommand gets "did you
    /// mean" (exit 64) instead of a bare "unexpected argument".
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        // `jobrun --version` is answered before the command tree is built, as `run` is below:
        // what it costs is the start-up every invocation of this binary pays and no more (the
        // floor `jobrun-bench noop-run` holds a cron run against), not the reflection over
        // every command's options that the full parse does first (about 2 ms).
        if arguments == ["--version"] {
            print(configuration.version)
            exitSucceeded()
        }
        do {
            if arguments.first == RunCommand.configuration.commandName,
                let run = RunCommandLine.parse(Array(arguments.dropFirst())) ?? (try? RunCommand.parse(Array(arguments.dropFirst())))?.request
            {
                // `jobrun run …`, the line cron and timers start every few minutes: its plain
                // spellings are read without reflection, the others by its own command alone.
                // The whole command tree is built only when another command is asked for, or
                // when both fail (help, a misspelt option), so that every message and exit code
                // comes from the full parse below.
                try await run.run()
                // Everything the run promised is done: its record is synced, its metrics file
                // renamed into place, its log lines written, its temp folder removed, its alerts
                // sent.
                exitSucceeded()
            }
            let names = configuration.subcommands.map { $0.configuration.commandName ?? "" } + ["help"]
            if let first = arguments.first, !first.hasPrefix("-"), !names.contains(first) {
                FileHandle.standardError.write(
                    Data("jobrun: unknown command '\(first)'\(NameSuggestion.hint(for: first, among: names)) (see jobrun --help)\n".utf8))
                Foundation.exit(JobExitCode.usage.rawValue)
            }
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    /// Ends the process with exit 0 once stdout and stderr are flushed. `_exit` skips only the
    /// exit handlers of the libraries libcurl brings in (OpenSSL, GnuTLS and others free what the
    /// kernel is about to free): a quarter of a millisecond of every cron run that finds nothing
    /// to do.
    private static func exitSucceeded() -> Never {
        fflush(nil)
        _exit(JobExitCode.ok.rawValue)
    }
}
