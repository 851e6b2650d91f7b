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

    /// The values given, for the code that uses them.
    var settings: GlobalSettings { GlobalSettings(root: root, jobsDir: jobsDir, json: json) }
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

/// Shell completion of job names: the jobs of the `--jobs-dir` already typed on the line, else
/// of `$JOBRUN_JOBS_DIR` or `./jobs`.
let jobNameCompletion = CompletionKind.custom { words, _, _ in
    let given = words.firstIndex(of: "--jobs-dir").flatMap { words.indices.contains($0 + 1) ? words[$0 + 1] : nil }
    return JobCatalog.load(directory: GlobalSettings(jobsDir: given).jobsDirectory).jobs.map(\.name)
}
