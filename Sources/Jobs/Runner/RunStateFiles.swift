import ConfinedFiles
/// `<root>/alerts/<job>`: a job's failure streak, written by jobrun (one JSON line).
public enum AlertStateSection: ConfigSection {
    public static let path = ""

    public static let job = OptionalParam<String>("job", doc: "the job's name")
    public static let failures = Param<Int>("failures", default: 0, range: 0...Double(Int32.max), doc: "failed runs in a row so far")
    public static let alerted = Param<Bool>("alerted", default: false, doc: "whether the failure hook ran for this streak")
    public static let reported = OptionalParam<String>(
        "reported", doc: "the service run (`$INVOCATION_ID`) whose failure jobrun reported and no `notify-failure` has claimed yet")

    public static let parameters: [any JobParameter] = [job, failures, alerted, reported]
}

/// `<root>/suspended/<job>`: why and since when a job is paused, written by `jobrun pause` (one
/// JSON line).
public enum PauseNoteSection: ConfigSection {
    public static let path = ""

    public static let job = OptionalParam<String>("job", doc: "the job's name")
    public static let pausedAt = OptionalParam<String>("paused_at", doc: "when it was paused (ISO 8601)")
    public static let user = OptionalParam<String>("user", doc: "who paused it")
    public static let note = OptionalParam<String>("note", doc: "why, as `jobrun pause --note` gave it")

    public static let parameters: [any JobParameter] = [job, pausedAt, user, note]
}

/// Reads the small state files jobrun keeps under the data root through the configuration
/// decoder, with its limits: a file that is not what jobrun wrote reads as nil, never as a
/// crash, a hang or a message that replays it.
public enum RunStateFile {
    /// The largest state file read.
    public static let maximumSize = 64 << 10

    /// The file's validated values, or nil when it is missing, too large or not a valid state
    /// file of `Section`.
    static func read<Section: ConfigSection>(_ path: String, as section: Section.Type) -> JobParams? {
        guard let text = try? ConfigFile.text(at: path, limit: maximumSize, what: "state file") else { return nil }
        return try? decode(text, file: path, as: section)
    }

    /// The same for the file `name` in `directory`, reached beneath the data root: a link, FIFO
    /// or unsafe file there reads as nil, never followed or opened.
    static func read<Section: ConfigSection>(_ name: String, in directory: ConfinedDirectory, as section: Section.Type) -> JobParams? {
        guard case .success(let bytes) = SmallFile.read(name, in: directory, limit: maximumSize),
            let text = String(validating: bytes, as: UTF8.self)
        else { return nil }
        return try? decode(text, file: directory.display(name), as: section)
    }

    /// The validated values of a state file's text, or every problem with it.
    public static func decode<Section: ConfigSection>(_ text: String, file: String, as section: Section.Type) throws(JobFileErrors) -> JobParams {
        let origin = SourcePosition(file: file, line: 1, column: 1)
        guard let root = try ConfigNode.parse(yaml: text, file: file), case .mapping = root.value else {
            throw JobFileErrors([JobFileError(origin, "a state file is one JSON object", expected: "{\"job\": …}")])
        }
        let (values, errors) = Section.validate(root, fallback: root.position)
        if !errors.isEmpty { throw JobFileErrors(errors) }
        return values
    }
}
