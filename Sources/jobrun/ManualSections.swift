import ArgumentParser
import Jobs

/// The reference sections of `jobrun`: its environment variables, exit codes and files. One
/// table feeds `jobrun --help` (the root command's discussion) and the manual page's
/// ENVIRONMENT, EXIT STATUS and FILES sections (`jobrun manual-sections`, appended by
/// `scripts/generate-manual.sh`); a test holds the docs' exit-code tables to the same codes.
enum ManualSections {
    struct Entry {
        var name: String
        var text: String
    }

    /// Every variable jobrun reads: the process's own, then those of the configuration files,
    /// taken from the parameters that declare them (`ConfigurationReference`).
    static var environment: [Entry] { processEnvironment + configurationEnvironment }

    static let processEnvironment: [Entry] = [
        Entry(name: DataRoot.environmentVariable, text: "Data root when --root is not given (else ./data)."),
        Entry(name: "JOBRUN_JOBS_DIR", text: "Jobs directory when --jobs-dir is not given (else ./jobs)."),
        Entry(name: "JOBRUN_LOG_FORMAT", text: "Log lines on stderr: json or text (--log-format)."),
        Entry(name: "JOBRUN_LOG_LEVEL", text: "Lowest level logged: debug, info, notice, warning, error (--log-level)."),
        Entry(name: "JOBRUN_LOG_FILE", text: "Log file instead of the data root's; - logs to stderr only (--log-file)."),
        Entry(name: "JOBRUN_PUSHGATEWAY", text: "Prometheus Pushgateway URL the run's metrics are pushed to (--pushgateway)."),
        Entry(name: DataRoot.allowInsecureVariable, text: "1 accepts a data root writable by its group or others (a container's emptyDir)."),
        Entry(name: RootKeySource.fileVariable, text: "The data root's key file (its path; the key is never in the environment)."),
        Entry(
            name: RootKeySource.credentialsDirectoryVariable,
            text: "Set by systemd (LoadCredential=): its \(RootKeySource.credentialName) is the data root's key, before any key file."),
        Entry(name: "JOBRUN_FAILPOINTS", text: "Testing only: delays or crashes at named points of a run."),
        Entry(name: "INVOCATION_ID, MONITOR_INVOCATION_ID", text: "Set by systemd: tell notify-failure which failures a run reported itself."),
    ]

    static var configurationEnvironment: [Entry] {
        ConfigurationReference.files.flatMap { file in
            file.sections.flatMap { section in
                section.parameters.compactMap { parameter -> Entry? in
                    let spec = parameter.spec
                    guard let variable = spec.environment else { return nil }
                    let key = section.path.isEmpty ? spec.name : "\(section.path).\(spec.name)"
                    return Entry(name: variable, text: "\(file.title), \(key): \(spec.doc).")
                }
            }
        }
    }

    /// What the failure hook finds in its environment.
    static let hookEnvironment: [Entry] = [
        Entry(name: "JOBRUN_JOB", text: "The job's name."), Entry(name: "JOBRUN_KIND", text: "Its kind."),
        Entry(name: "JOBRUN_RUN_ID", text: "The failed run."), Entry(name: "JOBRUN_OUTCOME", text: "failed, timed_out or unit_failed."),
        Entry(name: "JOBRUN_EXIT_CODE", text: "The run's exit code."), Entry(name: "JOBRUN_MESSAGE", text: "Why it failed."),
        Entry(name: "JOBRUN_FAILURES", text: "Consecutive failures so far."),
    ]

    static let files: [Entry] = [
        Entry(name: "<root>/account-<id>/", text: "An account's Postbox (postbox/db) and media cache (media/)."),
        Entry(name: "<root>/account-<id>/config.yaml", text: "The account's cloud configuration (mode 0600)."),
        Entry(name: "<root>/cluster.yaml", text: "Shared PostgreSQL store and S3 bucket of a fleet."),
        Entry(name: "<root>/logs/<process>-logs/", text: "Log files, JSON lines, rotated by size."),
        Entry(name: "<root>/metrics/", text: "Prometheus textfile-collector files, one per job."),
        Entry(name: "<root>/suspended/<job>", text: "A job paused with jobrun pause."),
        Entry(name: "<root>/alerts/<job>", text: "A job's failure streak and whether it was alerted."),
        Entry(name: "<root>/keys/store.key", text: "The data root's key on an encrypted root (mode 0600; jobrun init --encrypt)."),
        Entry(name: "<root>/locks/", text: "Run locks of the jobs on this host, and the stores lock that encrypt and rekey take alone."),
        Entry(name: "<jobs-dir>/*.yaml", text: "Job files (./jobs, $JOBRUN_JOBS_DIR or --jobs-dir)."),
    ]

    static var exitStatus: [Entry] { JobExitCode.allCases.map { Entry(name: String($0.rawValue), text: $0.description) } }

    /// The root command's `--help` discussion.
    static var help: String {
        "Exit codes (sysexits): " + exitStatus.map { "\($0.name) \($0.text)" }.joined(separator: ", ") + ".\n\nEnvironment: "
            + environment.map(\.name).joined(separator: ", ") + " (see man jobrun)."
    }

    /// The sections in mdoc, from EXIT STATUS to the end of the page.
    static var mdoc: String {
        func list(_ entries: [Entry], literal: Bool) -> [String] {
            [".Bl -tag -width 6n"] + entries.flatMap { [".It " + (literal ? "Ev " : "Pa ") + escape($0.name), escape($0.text)] } + [".El"]
        }
        var lines = [".Sh \"EXIT STATUS\"", ".Bl -tag -width 6n"]
        lines += exitStatus.flatMap { [".It \($0.name)", escape($0.text)] }
        lines += [".El", ".Sh ENVIRONMENT"]
        lines += list(environment, literal: true)
        lines += [".Pp", "The failure hook (onFailure) runs with:"]
        lines += list(hookEnvironment, literal: true)
        lines += [".Sh FILES"]
        lines += list(files, literal: false)
        return lines.joined(separator: "\n") + "\n"
    }

    /// Text safe on an mdoc line: no leading dot or quote, backslashes doubled.
    private static func escape(_ text: String) -> String {
        let escaped = text.replacingOccurrences(of: "\\", with: "\\e")
        return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
    }
}

/// `jobrun manual-sections` (not listed): prints the manual page's ENVIRONMENT, EXIT STATUS and
/// FILES sections for `scripts/generate-manual.sh`.
struct ManualSectionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "manual-sections", abstract: "Print the manual page's EXIT STATUS, ENVIRONMENT and FILES sections (mdoc).",
        shouldDisplay: false)

    func run() throws { print(ManualSections.mdoc, terminator: "") }
}
