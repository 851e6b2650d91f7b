import ArgumentParser
import Foundation
import Jobs

/// `jobrun notify-failure <job>`: what `jobrun-failure@<job>.service` (the units' `OnFailure=`)
/// runs when a job's service failed.
struct NotifyFailureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify-failure",
        abstract: "Alert that a job's service failed (run by systemd's OnFailure=): heartbeat /fail and the onFailure hook.",
        discussion: """
            jobrun alerts its own failures; this covers the ones it cannot see (its process killed by \
            systemd's timeout, the OOM killer, a crash). A failure streak already alerted is not \
            alerted again, so a failure jobrun reported is not reported twice.

            Example (what jobrun-failure@.service runs):
              jobrun notify-failure sync-history --root /var/lib/jobrun --jobs-dir /etc/jobrun/jobs
            """)

    @OptionGroup var options: GlobalOptions
    @OptionGroup var logging: LogOptions
    @Argument(help: "Job name (from --jobs-dir).", completion: jobNameCompletion) var job: String

    func run() async throws {
        let name = try knownJobName(job, options: options)
        _ = try options.existingRoot()
        guard let jobFile = try options.catalog().job(named: name) else { throw ExitCode(JobExitCode.usage.rawValue) }
        let env = try ProcessEnvironment(options: options, logging: logging, process: "run")
        defer { env.close() }
        await env.runner.alerts.unitFailed(jobFile)
    }
}
