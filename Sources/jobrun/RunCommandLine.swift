/// `jobrun run …` as cron and timers write it, read without ArgumentParser.
///
/// ArgumentParser builds `RunCommand`'s option table by reflection on every launch, over
/// `RunCommand`, its option groups and its completion commands. That is about 2 ms of an idle
/// run, most of it the runtime's conformance lookups. This reads the same options into the same
/// `RunCommand`, through a table of its options.
///
/// It takes only the plain spellings: `--name value` or `--name=value`, one flag per argument,
/// each option at most once, and one job. For anything else (help, a misspelt or repeated
/// option, a separate value that starts with `-`, `-qv`, `--`) it returns nil, and ArgumentParser reads
/// the line, so that every message and exit code comes from one place. A test checks that the
/// table names every option `RunCommand` declares and that both readers agree.
enum RunCommandLine {
    /// One option: its spellings, and how its value is set. Assignments, not key paths: a key
    /// path writes through a read, and ArgumentParser's wrappers stop the process when a value
    /// that was never set is read.
    struct Option<Value>: Sendable {
        let names: [String]
        let set: @Sendable (inout RunCommand, Value) -> Void
    }

    /// The options that take a value.
    static let valueOptions: [Option<String?>] = [
        Option(names: ["--root"]) { $0.options.root = $1 },
        Option(names: ["--jobs-dir"]) { $0.options.jobsDir = $1 },
        Option(names: ["--log-format"]) { $0.logging.format = $1 },
        Option(names: ["--log-level"]) { $0.logging.level = $1 },
        Option(names: ["--log-file"]) { $0.logging.file = $1 },
    ]

    /// The flags; each is off unless given.
    static let flags: [Option<Bool>] = [
        Option(names: ["--json"]) { $0.options.json = $1 },
        Option(names: ["--dry-run"]) { $0.dryRun = $1 },
        Option(names: ["--scheduled"]) { $0.scheduled = $1 },
        Option(names: ["-q", "--quiet"]) { $0.quiet = $1 },
        Option(names: ["-v", "--verbose"]) { $0.verbose = $1 },
    ]

    /// The command `arguments` (those after `run`) ask for, or nil to leave them to ArgumentParser.
    static func parse(_ arguments: [String]) -> RunCommand? {
        // Every property gets a value before any is read.
        var command = RunCommand()
        command.options = GlobalOptions()
        command.logging = LogOptions()
        for option in valueOptions { option.set(&command, nil) }
        for option in flags { option.set(&command, false) }
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
                flags[i].set(&command, true)
            } else if let i = valueOptions.firstIndex(where: { $0.names.contains(name) }), givenValues.insert(i).inserted {
                // After `=` any value but an empty one is the value; a separate one that starts with `-` may be
                // an option, which ArgumentParser decides.
                if let equals {
                    let value = argument[argument.index(after: equals)...]
                    guard !value.isEmpty else { return nil }
                    valueOptions[i].set(&command, String(value))
                } else {
                    guard let value = rest.popFirst(), !value.hasPrefix("-") else { return nil }
                    valueOptions[i].set(&command, value)
                }
            } else {
                return nil
            }
        }
        guard let job else { return nil }
        command.job = job
        do {
            try command.options.validate()
            try command.logging.validate()
            try command.validate()
        } catch {
            return nil
        }
        return command
    }
}
