import ArgumentParser
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
            DemoCommand.self, EnqueueUploadCommand.self,
        ]
    )
}
