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
    /// One option: its spellings, and the field of `RunRequest` it sets.
    struct Option<Value>: Sendable {
        let names: [String]
        let field: WritableKeyPath<RunRequest, Value> & Sendable
    }

    /// The options that take a value.
    static let valueOptions: [Option<String?>] = [
        Option(names: ["--root"], field: \.options.root),
        Option(names: ["--jobs-dir"], field: \.options.jobsDir),
        Option(names: ["--log-format"], field: \.logging.format),
        Option(names: ["--log-level"], field: \.logging.level),
        Option(names: ["--log-file"], field: \.logging.file),
    ]

    /// The flags; each is off unless given.
    static let flags: [Option<Bool>] = [
        Option(names: ["--json"], field: \.options.json),
        Option(names: ["--dry-run"], field: \.dryRun),
        Option(names: ["--scheduled"], field: \.scheduled),
        Option(names: ["-q", "--quiet"], field: \.quiet),
        Option(names: ["-v", "--verbose"], field: \.verbose),
    ]

    /// The run `arguments` (those after `run`) ask for, or nil to leave them to ArgumentParser.
    static func parse(_ arguments: [String]) -> RunRequest? {
        var request = RunRequest(job: "")
        var givenValues = Set<Int>()
        var givenFlags = Set<Int>()
        var job: String?
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            guard argument.hasPrefix("-") else {
                guard job == nil, !argument.isEmpty else { return nil }
                job = argument
                continue
            }
            let equals = argument.firstIndex(of: "=")
            let name = equals.map { String(argument[..<$0]) } ?? argument
            if let i = flags.firstIndex(where: { $0.names.contains(name) }) {
                guard equals == nil, givenFlags.insert(i).inserted else { return nil }
                request[keyPath: flags[i].field] = true
            } else if let i = valueOptions.firstIndex(where: { $0.names.contains(name) }), givenValues.insert(i).inserted {
                // After `=` any value but an empty one is the value; a separate one that starts with `-` may be
                // an option, which ArgumentParser decides.
                if let equals {
                    let value = argument[argument.index(after: equals)...]
                    guard !value.isEmpty else { return nil }
                    request[keyPath: valueOptions[i].field] = String(value)
                } else {
                    guard let value = rest.popFirst(), !value.hasPrefix("-") else { return nil }
                    request[keyPath: valueOptions[i].field] = value
                }
            } else {
                return nil
            }
        }
        guard let job else { return nil }
        request.job = job
        return request
    }
}
