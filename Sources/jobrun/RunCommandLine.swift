/// `jobrun run …` as cron and timers write it, read without ArgumentParser.
///
/// ArgumentParser builds `RunCommand`'s option table by reflection on every launch, over
/// `RunCommand`, its option groups and its completion commands: about 2 ms of an idle run, most
/// of it the runtime's conformance lookups. Even making a `RunCommand` value costs a third of a
/// millisecond (every option's wrapper builds its names). This reads the same options into a
/// `RunRequest`, through a table of its options.
///
/// It takes only the plain spellings: `--name value` or `--name=value`, one flag per argument,
/// each option at most once, and one job. For anything else (help, a misspelt or repeated
/// option, a separate value that starts with `-`, `-qv`, `--`) it returns nil, and ArgumentParser reads
/// the line, so that every message and exit code comes from one place. A test checks that the
/// table names every option `RunCommand` declares and that both readers agree.
enum RunCommandLine {
    /// One option: its spellings, and how it sets its field of `RunRequest` (a closure, not a
    /// key path: the runtime builds a key path object on first use, a tenth of a millisecond for
    /// this table).
    struct Option<Value>: Sendable {
        let names: [String]
        let set: @Sendable (inout RunRequest, Value) -> Void
    }

    /// The options that take a value.
    static let valueOptions: [Option<String?>] = [
        Option(names: ["--root"]) { $0.options.root = $1 },
        Option(names: ["--jobs-dir"]) { $0.options.jobsDir = $1 },
        Option(names: ["--log-format"]) { $0.logging.format = $1 },
        Option(names: ["--log-level"]) { $0.logging.level = $1 },
        Option(names: ["--log-file"]) { $0.logging.file = $1 },
        Option(names: ["--pushgateway"]) { $0.logging.pushgateway = $1 },
    ]

    /// The flags; each is off unless given.
    static let flags: [Option<Bool>] = [
        Option(names: ["--json"]) { $0.options.json = $1 },
        Option(names: ["--dry-run"]) { $0.dryRun = $1 },
        Option(names: ["--scheduled"]) { $0.scheduled = $1 },
        Option(names: ["-q", "--quiet"]) { $0.quiet = $1 },
        Option(names: ["-v", "--verbose"]) { $0.verbose = $1 },
    ]

    /// The run `arguments` (those after `run`) ask for, or nil to leave them to ArgumentParser.
    static func parse(_ arguments: [String]) -> RunRequest? {
        var request = RunRequest(job: "")
        var givenValues = Set<Int>()
        var givenFlags = Set<Int>()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            guard argument.hasPrefix("-") else {
                guard request.job.isEmpty, !argument.isEmpty else { return nil }
                request.job = argument
                continue
            }
            let equals = argument.firstIndex(of: "=")
            let name = equals.map { String(argument[..<$0]) } ?? argument
            if let i = flags.firstIndex(where: { $0.names.contains(name) }) {
                guard equals == nil, givenFlags.insert(i).inserted else { return nil }
                flags[i].set(&request, true)
            } else if let i = valueOptions.firstIndex(where: { $0.names.contains(name) }), givenValues.insert(i).inserted {
                // After `=` any value but an empty one is the value; a separate one that starts with `-` may be
                // an option, which ArgumentParser decides.
                if let equals {
                    let value = argument[argument.index(after: equals)...]
                    guard !value.isEmpty else { return nil }
                    valueOptions[i].set(&request, String(value))
                } else {
                    guard let value = rest.popFirst(), !value.hasPrefix("-") else { return nil }
                    valueOptions[i].set(&request, value)
                }
            } else {
                return nil
            }
        }
        return request.job.isEmpty ? nil : request
    }
}
