import ArgumentParser
import Foundation
import Jobs
import Postbox

/// `jobrun schedule`: the long-running scheduler; SIGTERM/SIGINT stop it cleanly (exit 0).
struct ScheduleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule", abstract: "Run due jobs by their schedules until SIGTERM, several at once over shared stores.",
        discussion: """
            Logs every event to stderr as well as to the root's log file: text on a terminal, JSON \
            lines otherwise (journald and container runtimes collect them); --log-format and \
            --log-level change that. A paused job (jobrun pause) is skipped at each of its fires.

            Examples:
              jobrun schedule --root /var/lib/jobrun --jobs-dir /etc/jobrun/jobs
              jobrun schedule --now --log-file - --log-format json     # a container: stderr only
              jobrun schedule --listen 127.0.0.1:9464                 # /metrics, /healthz, /readyz
            """)

    @OptionGroup var options: GlobalOptions
    @OptionGroup var logging: LogOptions
    @Flag(name: .customLong("now"), help: "Also run every enabled job once at start.") var runNow = false
    @Option(help: "Serve /metrics (Prometheus), /healthz and /readyz on this address: host:port, :port or [v6]:port.") var listen: String?

    func run() async throws {
        let catalog = try options.catalog()
        if !catalog.errors.isEmpty {
            throw fail(.config, "invalid job files, nothing scheduled:\n" + catalog.errors.map(\.description).joined(separator: "\n"))
        }
        let env = try ProcessEnvironment(
            options: options, logging: logging, process: "scheduler", console: isatty(STDERR_FILENO) == 1 ? .human : .json)
        defer { env.close() }
        let workQueue: (any ClusterWorkQueue)?
        do { workQueue = try ClusterConfig.load(root: env.root).postgres.map { pg throws(JobError) in try pg.workQueue() } } catch {
            throw fail(error)
        }
        let endpoint = SchedulerEndpoint(root: env.root)
        var listener: MetricsEndpoint?
        if let listen {
            do { listener = try MetricsEndpoint(address: listen, respond: { endpoint.respond($0) }) } catch { throw fail(error) }
            env.logger.info("scheduler.listening", ["address": .string(listen), "port": .int(Int64(listener?.port ?? 0))])
        }
        let scheduler = Scheduler(jobs: catalog.jobs, runner: env.runner, logger: env.logger, runAllAtStart: runNow, workQueue: workQueue)
        let task = Task { _ = await scheduler.run() }
        endpoint.setReady(true)
        let signals = SignalCancellation(cancelling: task, logger: env.logger) { endpoint.setReady(false) }
        await task.value
        withExtendedLifetime(signals) {}
        listener?.stop()
    }
}
