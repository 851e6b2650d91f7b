import ArgumentParser
import Foundation
import Jobs

/// `jobrun`: batch sync and cache-maintenance jobs over a Telegram-style Postbox and MediaBox.
@main
struct Jobrun: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobrun",
        abstract: "Batch sync and cache-maintenance jobs over a shared Postbox and MediaBox.",
        discussion: ManualSections.help,
        version: BuildInfo.line,
        subcommands: [
            RunCommand.self, ValidateCommand.self, ListCommand.self, StatusCommand.self, StatsCommand.self, ScheduleCommand.self, UnitsCommand.self,
            PauseCommand.self, ResumeCommand.self, NotifyFailureCommand.self,
            DemoCommand.self, EnqueueUploadCommand.self, ManualSectionsCommand.self, InitCommand.self, EncryptCommand.self,
            RekeyCommand.self, FetchCommand.self,
        ]
    )

    /// Parses and runs the command; a first argument that names no subcommand gets "did you
    /// mean" (exit 64) instead of a bare "unexpected argument".
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
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
}
