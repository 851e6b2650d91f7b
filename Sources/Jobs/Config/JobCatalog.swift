import ConfinedFiles
import Foundation

/// The job files of a jobs directory (`*.yaml`, `*.yml`), validated, with job names unique
/// across files. `resolve(_:)` answers `jobrun run <job-file|name>`.
public struct JobCatalog: Sendable {
    public let directory: URL?
    /// The kinds job files may name.
    public let kinds: JobKindRegistry
    /// Valid jobs, sorted by name.
    public let jobs: [JobFile]
    /// Every problem found in every file (a file with errors contributes no job).
    public let errors: [JobFileError]

    public init(jobs: [JobFile], errors: [JobFileError] = [], directory: URL? = nil, kinds: JobKindRegistry = .shipped) {
        self.jobs = jobs.sorted { $0.name < $1.name }
        self.errors = JobFileErrors(errors).errors
        self.directory = directory
        self.kinds = kinds
    }

    /// Loads every job file of `directory`. Never throws for bad files: their errors are in
    /// `errors` (use `loadStrict` to fail on any). A missing directory is an error at `directory:1:1`.
    public static func load(directory: URL, kinds: JobKindRegistry = .shipped) -> JobCatalog {
        // Listed with readdir on a descriptor, as the data root's folders are: FileManager's
        // listing costs every `jobrun run` about a tenth of a millisecond more.
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO, userInfo: [NSFilePathErrorKey: directory.path])
            return JobCatalog(
                jobs: [],
                errors: [
                    JobFileError(
                        SourcePosition(file: directory.path, line: 1, column: 1),
                        "cannot read jobs directory: \(StorageFailure.classify(error).1)",
                        expected: "a directory of *.yaml job files")
                ], directory: directory, kinds: kinds)
        }
        let names = ConfinedDirectory.entries(of: fd)
        close(fd)
        let files = names.filter { ($0.hasSuffix(".yaml") || $0.hasSuffix(".yml")) && !$0.hasPrefix(".") }.sorted()
        var jobs: [JobFile] = []
        var errors: [JobFileError] = []
        for name in files {
            let url = directory.appendingPathComponent(name)
            do {
                jobs.append(try JobFile.load(contentsOf: url, kinds: kinds))
            } catch {
                errors += error.errors
            }
        }
        return JobCatalog(validating: jobs, errors: errors, directory: directory, kinds: kinds)
    }

    /// Loads the given job files (`jobrun validate <files…>`): every error of every file, plus
    /// duplicate names among them. Paths are shown as given.
    public static func load(files: [String], kinds: JobKindRegistry = .shipped) -> JobCatalog {
        var jobs: [JobFile] = []
        var errors: [JobFileError] = []
        for path in files {
            do {
                jobs.append(try JobFile.load(contentsOf: URL(fileURLWithPath: path), displayPath: path, kinds: kinds))
            } catch {
                errors += error.errors
            }
        }
        return JobCatalog(validating: jobs, errors: errors, kinds: kinds)
    }

    /// Loads the jobs directory a command was pointed at, failing when it is missing, not a
    /// directory, or holds no job file at all: a mistyped `--jobs-dir` must never look like a
    /// directory of valid jobs (a CI gate running `validate` would pass). Bad files are still
    /// kept as `errors`.
    public static func loadRequired(directory: URL, kinds: JobKindRegistry = .shipped) throws(JobsDirectoryError) -> JobCatalog {
        let path = directory.path
        // `stat` follows every link on the way; a dangling link is there but is no directory.
        var st = stat()
        let type: mode_t? = stat(path, &st) == 0 ? st.st_mode & S_IFMT : DataRoot.fileType(path)
        switch type {
        case nil: throw .missing(path)
        case S_IFDIR?: break
        default: throw .notADirectory(path)
        }
        let catalog = load(directory: directory, kinds: kinds)
        if catalog.jobs.isEmpty, catalog.errors.isEmpty { throw .empty(path) }
        return catalog
    }

    /// Loads and throws all errors if any file is invalid or names collide.
    public static func loadStrict(directory: URL, kinds: JobKindRegistry = .shipped) throws(JobFileErrors) -> JobCatalog {
        let catalog = load(directory: directory, kinds: kinds)
        if !catalog.errors.isEmpty { throw JobFileErrors(catalog.errors) }
        return catalog
    }

    /// Builds a catalog from already-parsed jobs, reporting duplicate names. Of two files that
    /// define the same name, the one named after the job is kept (the file `run <name>` reads
    /// alone, see `ownFile`), else the first one given.
    public init(validating jobs: [JobFile], errors: [JobFileError] = [], directory: URL? = nil, kinds: JobKindRegistry = .shipped) {
        var seen: [String: Int] = [:]
        var unique: [JobFile] = []
        var all = errors
        for job in jobs {
            guard let index = seen[job.name] else {
                seen[job.name] = unique.count
                unique.append(job)
                continue
            }
            var (kept, duplicate) = (unique[index], job)
            if duplicate.isInOwnFile && !kept.isInOwnFile {
                swap(&kept, &duplicate)
                unique[index] = kept
            }
            all.append(
                JobFileError(
                    duplicate.namePosition, "duplicate job name '\(job.name)' (also defined at \(kept.namePosition))",
                    expected: "job names unique across the jobs directory"))
        }
        self.init(jobs: unique, errors: all, directory: directory, kinds: kinds)
    }

    /// Job `name` read from its own file in `directory` (`<name>.yaml`, else `<name>.yml`)
    /// without reading any other: how `run <name>` finds a job in the usual layout, one file
    /// per job named after it, so that a cron run parses one file rather than the directory.
    /// Nil when there is no such file or it does not validly define `name`; the caller then
    /// loads the whole directory, which finds the job elsewhere or reports why it cannot.
    public static func ownFile(of name: String, in directory: URL, kinds: JobKindRegistry = .shipped) -> JobFile? {
        guard !name.isEmpty, !name.hasPrefix("."), !name.contains("/") else { return nil }
        for file in JobFile.ownFileNames(of: name) {
            let url = directory.appendingPathComponent(file)
            guard access(url.path, F_OK) == 0 else { continue }
            guard let job = try? JobFile.load(contentsOf: url, kinds: kinds), job.name == name else { return nil }
            return job
        }
        return nil
    }

    public func job(named name: String) -> JobFile? { jobs.first { $0.name == name } }

    /// Resolves `run <job-file|name>`: an existing path (or anything ending in .yaml/.yml or
    /// containing `/`) is loaded as a file; anything else is looked up by name.
    public func resolve(_ reference: String) throws(JobResolveError) -> JobFile {
        let looksLikePath = reference.contains("/") || reference.hasSuffix(".yaml") || reference.hasSuffix(".yml")
        if looksLikePath || (job(named: reference) == nil && FileManager.default.fileExists(atPath: reference)) {
            guard FileManager.default.fileExists(atPath: reference) else { throw .fileNotFound(reference) }
            do {
                return try JobFile.load(contentsOf: URL(fileURLWithPath: reference), displayPath: reference, kinds: kinds)
            } catch {
                throw .invalid(error)
            }
        }
        if let job = job(named: reference) { return job }
        // A job whose file is invalid is "invalid", not "unknown".
        if let error = errors.first(where: { URL(fileURLWithPath: $0.file).deletingPathExtension().lastPathComponent == reference }) {
            throw .invalid(JobFileErrors(errors.filter { $0.file == error.file }))
        }
        throw .unknownJob(reference, available: jobs.map(\.name))
    }
}

/// Why `resolve` failed; `exitCode` is 64 for an unknown name or path, 78 for an invalid file.
public enum JobResolveError: Error, Sendable, CustomStringConvertible {
    case unknownJob(String, available: [String])
    case fileNotFound(String)
    case invalid(JobFileErrors)

    public var exitCode: JobExitCode {
        switch self {
        case .unknownJob, .fileNotFound: return .usage
        case .invalid: return .config
        }
    }

    public var description: String {
        switch self {
        case .unknownJob(let name, let available):
            return "unknown job '\(name)'" + NameSuggestion.hint(for: name, among: available)
                + (available.isEmpty ? " (no valid jobs found)" : " (known jobs: \(available.joined(separator: ", ")))")
        case .fileNotFound(let path):
            return "job file not found: \(path)"
        case .invalid(let errors):
            return errors.description
        }
    }
}

/// The jobs directory itself is wrong: the message says how to fix it.
public enum JobsDirectoryError: Error, Sendable, Equatable, CustomStringConvertible {
    case missing(String)
    case notADirectory(String)
    case empty(String)

    /// 66 (EX_NOINPUT) for a directory that is not there, 78 (EX_CONFIG) for one without jobs.
    public var exitCode: JobExitCode {
        switch self {
        case .missing, .notADirectory: return .noInput
        case .empty: return .config
        }
    }

    public var description: String {
        let fix =
            "give --jobs-dir DIR or set JOBRUN_JOBS_DIR (the shipped jobs are in the source tree's jobs/; docs/operations.md installs them to /etc/jobrun/jobs)"
        switch self {
        case .missing(let path): return "jobs directory \(path) does not exist: \(fix)"
        case .notADirectory(let path): return "jobs directory \(path) is not a directory: \(fix)"
        case .empty(let path): return "no job files (*.yaml, *.yml) in \(path): add one (see docs/job-files.md) or \(fix)"
        }
    }
}
