import Dispatch
import Foundation
import Jobs

/// What a job-running `jobrun` process sets up once: the data root, its log sink (one log
/// directory per process type), its TempBox, the shared account stores and the runner.
struct ProcessEnvironment {
    let root: DataRoot
    let sink: LogSink
    let logger: JobLogger
    let tempBox: TempBox
    let accounts: AccountContextPool
    let runner: JobRunner

    /// Fails with a sysexits code and a message naming the path and the reason (73 a root that
    /// cannot be created or written, 74 a full disk, 78 an unsafe root).
    /// `console` is where log lines go on stderr unless `logging` asks for a format itself.
    init(options: GlobalOptions, logging: LogOptions, process: String, console: LogSink.ConsoleMode = .auto, dryRun: Bool = false) throws {
        let log = try logging.resolve()
        root = try options.rootToUse(dryRun: dryRun)
        let skipped: [DataRootError]
        do {
            try root.createDirectories()
            // Every path of the layout that exists is checked before anything is opened: a
            // planted link, FIFO, hard link or unsafe mode stops the run (78) naming it, or is
            // logged and skipped where the layout marks the path optional.
            skipped = try root.verifyLayout()
        } catch {
            throw fail(StorageFailure.jobError(error, doing: "cannot use the data root \(root.path)"))
        }
        var configuration = LogSink.Configuration(
            directory: root.logs(process: process), process: process, minimumLevel: log.level, console: log.console ?? console)
        configuration.root = root
        // What a failure to open the log names: the data root, or the folder of `--log-file`.
        var logPlace = "the data root \(root.path)"
        if let file = log.file {
            if file == "-" {
                configuration.directory = nil
            } else {
                let url = URL(fileURLWithPath: file).standardizedFileURL
                configuration.directory = url.deletingLastPathComponent()
                configuration.fileName = url.lastPathComponent
                logPlace = "the log file's folder \(url.deletingLastPathComponent().path) (--log-file \(file))"
            }
        }
        do { sink = try LogSink(configuration: configuration) } catch {
            throw fail(StorageFailure.jobError(error, doing: "cannot use \(logPlace)"))
        }
        tempBox = TempBox(root: root, process: process)
        logger = JobLogger(sink: sink)
        JobLogHandler.bootstrap(sink)
        for problem in skipped {
            logger.warning("layout.skipped", ["reason": .string(DataRoot.skippedMessage(problem))])
        }
        accounts = AccountContextPool(root: root)
        var runner = JobRunner(root: root, accounts: accounts, logger: logger, temp: tempBox)
        runner.pushgateway = log.pushgateway
        self.runner = runner
        if let problem = runner.alerts.environmentProblem { throw fail(.config, problem) }
    }

    func close() { tempBox.close() }
}

/// Cancels `task` on SIGTERM or SIGINT (the work stops at its next checkpoint), instead of the
/// default of dying mid-write.
final class SignalCancellation: @unchecked Sendable {
    private var sources: [DispatchSourceSignal] = []

    /// `draining` runs first, when the signal arrives (a scheduler stops reporting ready).
    init(cancelling task: Task<Void, Never>, logger: JobLogger, draining: @escaping @Sendable () -> Void = {}) {
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                logger.notice("process.signal", ["signal": .string(sig == SIGTERM ? "SIGTERM" : "SIGINT")])
                draining()
                task.cancel()
            }
            source.resume()
            sources.append(source)
        }
    }

    deinit { sources.forEach { $0.cancel() } }
}
