import ArgumentParser
import Foundation
import Jobs

/// `jobrun pause <job>`: suspends a job without editing its file; every process on the root
/// (timers, cron, `schedule`) skips it until `jobrun resume`.
struct PauseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Suspend a job: scheduled runs skip it (exit 0, a run.suspended event) until `jobrun resume`.",
        discussion: """
            The state is a small file under the data root (suspended/<job>), read by every jobrun \
            process on the root; the job file is not touched. A run by hand (`jobrun run <job>`) \
            still runs a paused job.

            Examples:
              jobrun pause prefetch-chat-media --note "cloud maintenance until 14:00"
              jobrun status
              jobrun resume prefetch-chat-media
            """)

    @OptionGroup var options: GlobalOptions
    @Argument(help: "Job name (from --jobs-dir).", completion: jobNameCompletion) var job: String
    @Option(help: "Why, shown by `jobrun status` and logged by skipped runs.") var note: String?

    func run() throws {
        let name = try knownJobName(job, options: options)
        let root = try options.existingRoot()
        do { try JobSuspension(root: root).pause(name, note: note) } catch {
            throw fail(StorageFailure.jobError(error, doing: "cannot pause \(name) under \(root.path)"))
        }
        if options.json { printJSON(.object(["version": .int(1), "job": .string(name), "paused": .bool(true)])) } else { print("\(name): paused") }
    }
}

/// `jobrun resume <job>`: undoes `jobrun pause`.
struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resume a job paused with `jobrun pause`: its next scheduled run runs.",
        discussion: """
            A job with `enabled: false` in its file stays suspended: edit the file for that.

            Example:
              jobrun resume prefetch-chat-media
            """)

    @OptionGroup var options: GlobalOptions
    @Argument(help: "Job name (from --jobs-dir).", completion: jobNameCompletion) var job: String

    func run() throws {
        let name = try knownJobName(job, options: options)
        let root = try options.existingRoot()
        let resumed: Bool
        do { resumed = try JobSuspension(root: root).resume(name) } catch {
            throw fail(StorageFailure.jobError(error, doing: "cannot resume \(name) under \(root.path)"))
        }
        if options.json {
            printJSON(.object(["version": .int(1), "job": .string(name), "paused": .bool(false), "was_paused": .bool(resumed)]))
        } else {
            print(resumed ? "\(name): resumed" : "\(name): was not paused")
        }
    }
}

/// The name of a job of the jobs directory, or a usage error with "did you mean".
func knownJobName(_ name: String, options: GlobalOptions) throws -> String {
    let catalog = try options.catalog()
    if catalog.job(named: name) != nil { return name }
    throw fail(.usage, JobResolveError.unknownJob(name, available: catalog.jobs.map(\.name)).description)
}
