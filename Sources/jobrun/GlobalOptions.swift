import ArgumentParser
import Foundation
import Jobs

/// Options every `jobrun` command takes (`--root`, `--jobs-dir`, `--json`), and what they lead to:
/// the data root and the job catalog.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "Data root (default: $JOBRUN_ROOT, else ./data).")
    var root: String?

    @Option(name: .customLong("jobs-dir"), help: "Directory of job files (default: $JOBRUN_JOBS_DIR, else ./jobs).")
    var jobsDir: String?

    @Flag(name: .long, help: "Machine-readable JSON output.")
    var json = false

    var dataRoot: DataRoot { DataRoot.resolve(explicit: root) }

    /// True when neither `--root` nor `$JOBRUN_ROOT` chose the root (it is `./data`).
    var rootIsDefault: Bool {
        [root, LaunchEnvironment.variables[DataRoot.environmentVariable]].allSatisfy { $0?.isEmpty ?? true }
    }

    var jobsDirectory: URL { Self.jobsDirectory(given: jobsDir) }

    /// The jobs directory `--jobs-dir` names, else `$JOBRUN_JOBS_DIR`, else `./jobs`.
    static func jobsDirectory(given jobsDir: String?) -> URL {
        let path = jobsDir ?? getenv("JOBRUN_JOBS_DIR").map { String(cString: $0) } ?? "./jobs"
        let url = URL(fileURLWithPath: path, isDirectory: true)  // (told, not asked: no `stat`)
        // An absolute path without `.`, `..` or empty components is already standard; only
        // another one goes through Foundation's path standardization (a tenth of a millisecond
        // of every `jobrun run`).
        let components = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let isStandard = path.hasPrefix("/") && !components.contains { $0.isEmpty || $0 == "." || $0 == ".." }
        return isStandard ? url : url.standardizedFileURL
    }

    /// The job catalog of `--jobs-dir` (invalid files are kept as errors, not thrown). A missing,
    /// non-directory or empty jobs directory ends the process with the fix in the message.
    func catalog() throws -> JobCatalog {
        do { return try JobCatalog.loadRequired(directory: jobsDirectory) } catch { throw fail(error.exitCode, error.description) }
    }

    /// True when `--jobs-dir` or `$JOBRUN_JOBS_DIR` chose the jobs directory (it is not `./jobs`).
    var jobsDirIsExplicit: Bool {
        [jobsDir, LaunchEnvironment.variables["JOBRUN_JOBS_DIR"]].contains { $0?.isEmpty == false }
    }

    /// The data root of a command that reads or changes what a root already holds (`status`,
    /// `stats`, `pause`, `resume`, `enqueue-upload`, `notify-failure`): a root that does not exist
    /// (a mistyped `--root`) ends the process with 66 and nothing is created. Only the commands
    /// that run jobs (`run`, `schedule`, `demo`) may create a fresh root (`rootToUse`).
    func existingRoot() throws -> DataRoot {
        let root = dataRoot
        if let missing = StoreInspection(root: root).missingRoot() { throw fail(.noInput, missing) }
        return root
    }

    /// The data root a job-running command may create: an explicit `--root` or `$JOBRUN_ROOT` is
    /// created when missing; the `./data` fallback only when it already exists (a command run in
    /// the wrong directory must not leave a fresh root behind), and a dry run never creates one.
    func rootToUse(dryRun: Bool = false) throws -> DataRoot {
        let root = dataRoot
        guard DataRoot.exists(root) == false else { return root }
        if dryRun {
            throw fail(
                .noInput, "no data root at \(root.path): a dry run creates nothing (give --root or set \(DataRoot.environmentVariable) to an existing root)")
        }
        if rootIsDefault {
            throw fail(
                .noInput,
                "no data root: neither --root nor \(DataRoot.environmentVariable) is set and \(root.path) does not exist (give --root DIR, set \(DataRoot.environmentVariable), or create \(root.path) to use it)"
            )
        }
        return root
    }
}

/// Ends the process with a sysexits code after printing `message` to stderr.
func fail(_ code: JobExitCode, _ message: String) -> ExitCode {
    FileHandle.standardError.write(Data("jobrun: \(message)\n".utf8))
    return ExitCode(code.rawValue)
}

/// Ends the process with a `JobError`'s exit code and message.
func fail(_ error: JobError) -> ExitCode { fail(error.exitCode, error.message) }

/// Prints a value as one line of JSON.
func printJSON(_ value: LogValue) {
    print(JSONLine.encode(value))
}

/// Rows of as many cells as the first as lines, each cell padded to its column's widest and two
/// spaces apart, and the columns' widths.
func alignedColumns(_ rows: [[String]]) -> (lines: [String], widths: [Int]) {
    let widths = rows[0].indices.map { i in rows.map { $0[i].count }.max() ?? 0 }
    let lines = rows.map { row in
        row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }.joined(separator: "  ")
    }
    return (lines, widths)
}

/// Shell completion of job names: the jobs of the `--jobs-dir` already typed on the line, else
/// of `$JOBRUN_JOBS_DIR` or `./jobs`.
let jobNameCompletion = CompletionKind.custom { words, _, _ in
    let given = words.firstIndex(of: "--jobs-dir").flatMap { words.indices.contains($0 + 1) ? words[$0 + 1] : nil }
    return JobCatalog.load(directory: GlobalOptions.jobsDirectory(given: given)).jobs.map(\.name)
}
