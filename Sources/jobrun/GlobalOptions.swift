import ArgumentParser
import Foundation
import Jobs

/// Options every `jobrun` command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "Data root (default: $JOBRUN_ROOT, else ./data).")
    var root: String?

    @Option(name: .customLong("jobs-dir"), help: "Directory of job files (default: $JOBRUN_JOBS_DIR, else ./jobs).")
    var jobsDir: String?

    @Flag(name: .long, help: "Machine-readable JSON output.")
    var json = false

    var dataRoot: DataRoot { DataRoot.resolve(explicit: root) }

    var jobsDirectory: URL {
        let path = jobsDir ?? ProcessInfo.processInfo.environment["JOBRUN_JOBS_DIR"] ?? "./jobs"
        return URL(fileURLWithPath: path).standardizedFileURL
    }

    /// The job catalog of `--jobs-dir` (invalid files are kept as errors, not thrown).
    func catalog() -> JobCatalog {
        FileManager.default.fileExists(atPath: jobsDirectory.path) ? JobCatalog.load(directory: jobsDirectory) : JobCatalog(jobs: [])
    }
}

/// Ends the process with a sysexits code after printing `message` to stderr.
func fail(_ code: JobExitCode, _ message: String) -> ExitCode {
    FileHandle.standardError.write(Data("jobrun: \(message)\n".utf8))
    return ExitCode(code.rawValue)
}

/// Prints a value as one line of JSON.
func printJSON(_ value: LogValue) {
    print(JSONLine.encode(value))
}
