import ArgumentParser

/// `jobrun`: batch sync and cache-maintenance jobs over a Telegram-style Postbox and MediaBox.
@main
struct Jobrun: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobrun",
        abstract: "Batch sync and cache-maintenance jobs over a shared Postbox and MediaBox.",
        subcommands: [DemoCommand.self]
    )
}
