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
    init(options: GlobalOptions, process: String, console: LogSink.ConsoleMode = .auto, dryRun: Bool = false) throws {
        root = try options.rootToUse(dryRun: dryRun)
        do {
            try root.createDirectories()
            sink = try LogSink(root: root, process: process, console: console)
            tempBox = try TempBox(root: root, process: process)
        } catch {
            let failure = StorageFailure.jobError(error, doing: "cannot use the data root \(root.path)")
            throw fail(failure.exitCode, failure.message)
        }
        logger = JobLogger(sink: sink)
        accounts = AccountContextPool(root: root)
        runner = JobRunner(root: root, accounts: accounts, logger: logger, tempDirectory: tempBox.directory)
    }

    func close() { tempBox.close() }
}

/// Cancels `task` on SIGTERM or SIGINT (the work stops at its next checkpoint), instead of the
/// default of dying mid-write.
final class SignalCancellation: @unchecked Sendable {
    private var sources: [DispatchSourceSignal] = []

    init(cancelling task: Task<Void, Never>, logger: JobLogger) {
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                logger.notice("process.signal", ["signal": .string(sig == SIGTERM ? "SIGTERM" : "SIGINT")])
                task.cancel()
            }
            source.resume()
            sources.append(source)
        }
    }

    deinit { sources.forEach { $0.cancel() } }
}
