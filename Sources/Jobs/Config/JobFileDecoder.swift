import Foundation

/// Strict decoder from YAML text to `JobFile`: unknown keys, wrong types, bad values and missing
/// keys are all collected as positioned `JobFileError`s.
struct JobFileDecoder {
    let file: String
    let kinds: JobKindRegistry
    var errors: [JobFileError] = []

    init(file: String, kinds: JobKindRegistry) {
        self.file = file
        self.kinds = kinds
    }

    static let heartbeatExpected = "an http:// or https:// URL without spaces, such as https://hc-ping.com/<uuid>"
    static let namePattern = "letters, digits, '-' and '_', starting with a letter or digit, at most 64 characters"
    static let timeZoneExpected = "an IANA time zone such as UTC or Europe/Berlin"

    typealias Top = JobFileSection

    mutating func decode(yaml: String) throws(JobFileErrors) -> JobFile {
        let root = try parseRoot(yaml: yaml)
        let (top, topErrors) = JobFileSection.validate(root, fallback: root.position)
        errors += topErrors
        let namePosition = top.position(of: Top.name)
        let name = decodeName(top)
        let kind = decodeKind(top)
        let timeZone = decodeTimeZone(top)
        let schedule = decodeSchedule(top, root: root)
        let params = decodeParams(root, top: top, kind: kind)
        let heartbeat = decodeHeartbeat(top)

        guard let kind, errors.isEmpty else { throw JobFileErrors(errors) }
        return JobFile(
            name: name, kind: kind.name, description: top[Top.description], enabled: top[Top.enabled], schedule: schedule,
            timeZone: timeZone, timeout: top[Top.timeout], retry: RetryPolicy(top[Top.retry]),
            concurrencyPolicy: top[Top.concurrencyPolicy], lockWait: top[Top.lockWait], startingDeadline: top[Top.startingDeadline],
            randomizedDelay: top[Top.randomizedDelay], accounts: top[Top.accounts], onFailure: top[Top.onFailure],
            heartbeat: heartbeat, heartbeatTimeout: top[Top.heartbeatTimeout], params: params, source: file,
            namePosition: namePosition)
    }

    /// Parses the text: the root must be a mapping.
    private func parseRoot(yaml: String) throws(JobFileErrors) -> ConfigNode {
        let origin = SourcePosition(file: file, line: 1, column: 1)
        guard let root = try ConfigNode.parse(yaml: yaml, file: file) else {
            throw JobFileErrors([JobFileError(origin, "job file is empty", expected: "a mapping with name, kind and params")])
        }
        guard case .mapping = root.value else {
            throw JobFileErrors([
                JobFileError(
                    root.position, "a job file must be a mapping, found \(root.typeName)",
                    expected: "keys such as name:, kind:, schedule:, params:")
            ])
        }
        return root
    }

    private mutating func decodeHeartbeat(_ top: JobParams) -> String? {
        guard let text = top[Top.heartbeat] else { return nil }
        if HeartbeatURL.isValid(text) { return text }
        errors.append(top.error(Top.heartbeat, "'heartbeat' is not a usable URL", expected: Self.heartbeatExpected))
        return nil
    }

    private mutating func decodeName(_ top: JobParams) -> String {
        guard let text = top.values[Top.name.spec.name].flatMap(String.init(paramValue:)) else { return "" }
        if Self.isValidName(text) { return text }
        errors.append(top.error(Top.name, "invalid job name \(ShownText.value(text))", expected: Self.namePattern))
        return ""
    }

    private mutating func decodeKind(_ top: JobParams) -> (any JobKind)? {
        guard let text = top.values[Top.kind.spec.name].flatMap(String.init(paramValue:)) else { return nil }
        if let kind = kinds.kind(named: text) { return kind }
        // Only an error spells out the kinds: a valid file never builds the list.
        errors.append(
            top.error(
                Top.kind, "unknown job kind \(ShownText.value(text))\(suggestion(for: text, among: kinds.names))",
                expected: "one of " + kinds.names.joined(separator: ", ")))
        return nil
    }

    private mutating func decodeTimeZone(_ top: JobParams) -> TimeZone? {
        guard let text = top[Top.timeZone] else { return nil }
        if let zone = TimeZone(identifier: text) { return zone }
        errors.append(top.error(Top.timeZone, "unknown time zone \(ShownText.value(text))", expected: Self.timeZoneExpected))
        return nil
    }

    private mutating func decodeSchedule(_ top: JobParams, root: ConfigNode) -> CronSchedule? {
        guard let text = top[Top.schedule], let node = Self.entry(Top.schedule, in: root)?.value else { return nil }
        switch CronSchedule.parse(text) {
        case .success(let parsed):
            return parsed
        case .failure(let error):
            errors.append(
                JobFileError(
                    node.position(atOffset: error.offset), "bad cron schedule \(ShownText.value(text)): \(error.message)",
                    expected: CronSchedule.expected))
            return nil
        }
    }

    /// The root's entry for a key.
    private static func entry(_ param: any JobParameter, in root: ConfigNode) -> ConfigNode.Entry? {
        guard case .mapping(let entries) = root.value else { return nil }
        return entries.first { $0.key == param.spec.name }
    }

    /// `params:`, validated against the kind's parameters when the kind is known.
    private mutating func decodeParams(_ root: ConfigNode, top: JobParams, kind: (any JobKind)?) -> JobParams {
        guard let kind else { return JobParams(kind: "", values: [:], fallback: root.position) }
        let entry = Self.entry(Top.params, in: root)
        let (validated, paramErrors) = SectionSchema(kind).validate(entry?.value, fallback: entry?.keyPosition ?? root.position)
        errors += paramErrors
        return validated
    }

    static func isValidName(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, text.unicodeScalars.count <= 64 else { return false }
        func alnum(_ c: Unicode.Scalar) -> Bool { c.isASCII && (CharacterSet.alphanumerics.contains(c)) }
        return alnum(first) && text.unicodeScalars.allSatisfy { alnum($0) || $0 == "-" || $0 == "_" }
    }
}
