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

    static let topLevelKeys = [
        "name", "kind", "description", "enabled", "schedule", "timeZone", "timeout", "retry",
        "concurrencyPolicy", "lockWait", "startingDeadline", "randomizedDelay", "accounts", "params",
        "onFailure", "heartbeat", "heartbeatTimeout",
    ]
    static let heartbeatExpected = "an http:// or https:// URL without spaces, such as https://hc-ping.com/<uuid>"
    static let namePattern = "letters, digits, '-' and '_', starting with a letter or digit, at most 64 characters"
    static let timeZoneExpected = "an IANA time zone such as UTC or Europe/Berlin"

    /// The top-level mapping's entries by key, with the root node for positions.
    private struct Fields {
        let root: ConfigNode
        var entries: [String: ConfigNode.Entry] = [:]

        /// The value of `key`, nil when absent or null.
        func value(_ key: String) -> ConfigNode? {
            guard let node = entries[key]?.value, !node.isNull else { return nil }
            return node
        }
    }

    mutating func decode(yaml: String) throws(JobFileErrors) -> JobFile {
        let fields = try topLevelFields(yaml: yaml)
        let (name, namePosition) = decodeName(fields)
        let kind = decodeKind(fields)
        let description = fields.value("description").flatMap { string($0, key: "description", expected: "a string") }
        let enabled = fields.value("enabled").flatMap { bool($0, key: "enabled") } ?? true
        let timeZone = decodeTimeZone(fields.value("timeZone"))
        let schedule = decodeSchedule(fields.value("schedule"))
        let timeout = duration("timeout", fields.value("timeout"), range: 1...(7 * 86_400)) ?? .seconds(3600)
        let lockWait = duration("lockWait", fields.value("lockWait"), range: 0...(7 * 86_400)) ?? .zero
        let startingDeadline = duration("startingDeadline", fields.value("startingDeadline"), range: 1...(366 * 86_400))
        let randomizedDelay = duration("randomizedDelay", fields.value("randomizedDelay"), range: 0...(86_400)) ?? .zero
        let policy = decodeConcurrencyPolicy(fields.value("concurrencyPolicy"))
        let retry = decodeRetry(fields.value("retry"))
        let accounts = decodeAccounts(fields.value("accounts"))
        let params = decodeParams(fields, kind: kind)
        let onFailure = fields.value("onFailure").flatMap { string($0, key: "onFailure", expected: "a shell command") }
        let heartbeat = decodeHeartbeat(fields.value("heartbeat"))
        let heartbeatTimeout = duration("heartbeatTimeout", fields.value("heartbeatTimeout"), range: 1...300) ?? .seconds(10)

        guard let kind, errors.isEmpty else { throw JobFileErrors(errors) }
        var job = JobFile(
            name: name, kind: kind.name, description: description, enabled: enabled, schedule: schedule,
            timeZone: timeZone, timeout: timeout, retry: retry, concurrencyPolicy: policy, lockWait: lockWait,
            startingDeadline: startingDeadline, randomizedDelay: randomizedDelay, accounts: accounts,
            params: params, source: file, namePosition: namePosition)
        job.onFailure = onFailure
        job.heartbeat = heartbeat
        job.heartbeatTimeout = heartbeatTimeout
        return job
    }

    private mutating func decodeHeartbeat(_ node: ConfigNode?) -> String? {
        guard let node, let text = string(node, key: "heartbeat", expected: Self.heartbeatExpected) else { return nil }
        if HeartbeatURL.isValid(text) { return text }
        errors.append(JobFileError(node.position, "'heartbeat' is not a usable URL", expected: Self.heartbeatExpected))
        return nil
    }

    /// Parses the text and sorts the root mapping's keys into known ones and errors.
    private mutating func topLevelFields(yaml: String) throws(JobFileErrors) -> Fields {
        let origin = SourcePosition(file: file, line: 1, column: 1)
        guard let root = try ConfigNode.parse(yaml: yaml, file: file) else {
            throw JobFileErrors([JobFileError(origin, "job file is empty", expected: "a mapping with name, kind and params")])
        }
        guard case .mapping(let entries) = root.value else {
            throw JobFileErrors([
                JobFileError(
                    root.position, "a job file must be a mapping, found \(root.typeName)",
                    expected: "keys such as name:, kind:, schedule:, params:")
            ])
        }
        var fields = Fields(root: root)
        for entry in entries {
            if Self.topLevelKeys.contains(entry.key) {
                fields.entries[entry.key] = entry
            } else {
                errors.append(
                    JobFileError(
                        entry.keyPosition, "unknown key \(ConfigNode.quotedKey(entry.key))\(suggestion(for: entry.key, among: Self.topLevelKeys))",
                        expected: "one of " + Self.topLevelKeys.joined(separator: ", ")))
            }
        }
        return fields
    }

    /// A required key that is absent, or present without a value.
    private mutating func missing(_ key: String, _ expected: String, in fields: Fields) {
        if let entry = fields.entries[key] {
            errors.append(JobFileError(entry.value.position, "'\(key)' must have a value", expected: expected))
        } else {
            errors.append(JobFileError(fields.root.position, "missing required key '\(key)'", expected: "\(key): \(expected)"))
        }
    }

    private mutating func decodeName(_ fields: Fields) -> (String, SourcePosition) {
        guard let node = fields.value("name") else {
            missing("name", Self.namePattern, in: fields)
            return ("", fields.root.position)
        }
        if let text = string(node, key: "name", expected: Self.namePattern) {
            if Self.isValidName(text) { return (text, node.position) }
            errors.append(JobFileError(node.position, "invalid job name \(ConfigNode.quotedKey(text))", expected: Self.namePattern))
        }
        return ("", node.position)
    }

    private mutating func decodeKind(_ fields: Fields) -> (any JobKind)? {
        // Only an error spells out the kinds: a valid file never builds the list.
        let kinds = self.kinds
        var expected: String { "one of " + kinds.names.joined(separator: ", ") }
        guard let node = fields.value("kind") else {
            missing("kind", expected, in: fields)
            return nil
        }
        guard let text = string(node, key: "kind", expected: expected) else { return nil }
        if let kind = kinds.kind(named: text) { return kind }
        errors.append(
            JobFileError(
                node.position, "unknown job kind \(ConfigNode.quotedKey(text))\(suggestion(for: text, among: kinds.names))",
                expected: expected))
        return nil
    }

    private mutating func decodeTimeZone(_ node: ConfigNode?) -> TimeZone? {
        guard let node, let text = string(node, key: "timeZone", expected: Self.timeZoneExpected) else { return nil }
        if let zone = TimeZone(identifier: text) { return zone }
        errors.append(JobFileError(node.position, "unknown time zone \(ConfigNode.quotedKey(text))", expected: Self.timeZoneExpected))
        return nil
    }

    private mutating func decodeSchedule(_ node: ConfigNode?) -> CronSchedule? {
        guard let node, let text = string(node, key: "schedule", expected: CronSchedule.expected) else { return nil }
        switch CronSchedule.parse(text) {
        case .success(let parsed):
            return parsed
        case .failure(let error):
            errors.append(
                JobFileError(
                    node.position(atOffset: error.offset), "bad cron schedule '\(text)': \(error.message)",
                    expected: CronSchedule.expected))
            return nil
        }
    }

    private mutating func decodeConcurrencyPolicy(_ node: ConfigNode?) -> ConcurrencyPolicy {
        var expected: String { "one of " + ConcurrencyPolicy.allCases.map(\.rawValue).joined(separator: ", ") }  // for errors only
        guard let node, let text = string(node, key: "concurrencyPolicy", expected: expected) else { return .forbid }
        if let parsed = ConcurrencyPolicy(rawValue: text) { return parsed }
        errors.append(
            JobFileError(
                node.position,
                "unknown concurrencyPolicy \(ConfigNode.quotedKey(text))\(suggestion(for: text, among: ConcurrencyPolicy.allCases.map(\.rawValue)))",
                expected: expected))
        return .forbid
    }

    private mutating func decodeAccounts(_ node: ConfigNode?) -> [Int64] {
        guard let node else { return [0] }
        guard case .list(let items)? = ParamDecoder.decode(node, as: .list(.int), range: 0...Double(Int32.max), name: "accounts", errors: &errors) else {
            return [0]
        }
        let ids = items.compactMap {
            if case .int(let id) = $0 { return id }; return nil
        }
        if ids.isEmpty {
            errors.append(JobFileError(node.position, "accounts must not be empty", expected: "a list of account ids such as [0]"))
        } else if Set(ids).count != ids.count {
            errors.append(JobFileError(node.position, "an account is listed twice", expected: "each account id once"))
        } else {
            return ids
        }
        return [0]
    }

    /// `params:`, validated against the kind's parameters when the kind is known.
    private mutating func decodeParams(_ fields: Fields, kind: (any JobKind)?) -> JobParams {
        guard let kind else { return JobParams(kind: "", values: [:], fallback: fields.root.position) }
        let (validated, paramErrors) = JobParamsSchema(kind).validate(
            fields.entries["params"]?.value, fallback: fields.entries["params"]?.keyPosition ?? fields.root.position)
        errors += paramErrors
        return validated
    }

    static func isValidName(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, text.unicodeScalars.count <= 64 else { return false }
        func alnum(_ c: Unicode.Scalar) -> Bool { c.isASCII && (CharacterSet.alphanumerics.contains(c)) }
        return alnum(first) && text.unicodeScalars.allSatisfy { alnum($0) || $0 == "-" || $0 == "_" }
    }

    private mutating func string(_ node: ConfigNode, key: String, expected: @autoclosure () -> String) -> String? {
        guard case .scalar(let text, .string) = node.value else {
            errors.append(JobFileError(node.position, "'\(key)' has the wrong type: found \(node.typeName)", expected: expected()))
            return nil
        }
        return text
    }

    private mutating func bool(_ node: ConfigNode, key: String) -> Bool? {
        if case .bool(let value)? = ParamDecoder.decode(node, as: .bool, range: nil, name: key, errors: &errors) { return value }
        return nil
    }

    private mutating func duration(_ key: String, _ node: ConfigNode?, range: ClosedRange<Double>) -> Duration? {
        guard let node else { return nil }
        if case .duration(let value)? = ParamDecoder.decode(node, as: .duration, range: range, name: key, errors: &errors) { return value }
        return nil
    }

    private mutating func decodeRetry(_ node: ConfigNode?) -> RetryPolicy {
        var policy = RetryPolicy()
        guard let node else { return policy }
        guard case .mapping(let entries) = node.value else {
            errors.append(
                JobFileError(
                    node.position, "'retry' has the wrong type: found \(node.typeName)",
                    expected: "a mapping with backoffLimit and backoff"))
            return policy
        }
        for entry in entries {
            switch entry.key {
            case "backoffLimit":
                if case .int(let limit)? = ParamDecoder.decode(entry.value, as: .int, range: 0...100, name: "retry.backoffLimit", errors: &errors) {
                    policy.backoffLimit = Int(limit)
                }
            case "backoff":
                decodeBackoff(entry.value, into: &policy)
            default:
                errors.append(
                    JobFileError(
                        entry.keyPosition,
                        "unknown key \(ConfigNode.quotedKey(entry.key)) in retry\(suggestion(for: entry.key, among: ["backoffLimit", "backoff"]))",
                        expected: "one of backoffLimit, backoff"))
            }
        }
        return policy
    }

    /// `retry.backoff`: initial, max (≥ initial) and multiplier.
    private mutating func decodeBackoff(_ node: ConfigNode, into policy: inout RetryPolicy) {
        guard case .mapping(let inner) = node.value else {
            errors.append(
                JobFileError(
                    node.position, "'retry.backoff' has the wrong type: found \(node.typeName)",
                    expected: "a mapping with initial, max, multiplier"))
            return
        }
        var maxPosition: SourcePosition?
        for item in inner {
            switch item.key {
            case "initial":
                if case .duration(let value)? = ParamDecoder.decode(
                    item.value, as: .duration, range: 0...86_400, name: "retry.backoff.initial", errors: &errors)
                {
                    policy.initialBackoff = value
                }
            case "max":
                maxPosition = item.value.position
                if case .duration(let value)? = ParamDecoder.decode(
                    item.value, as: .duration, range: 0...(7 * 86_400), name: "retry.backoff.max", errors: &errors)
                {
                    policy.maxBackoff = value
                }
            case "multiplier":
                if case .double(let value)? = ParamDecoder.decode(item.value, as: .double, range: 1...10, name: "retry.backoff.multiplier", errors: &errors) {
                    policy.multiplier = value
                }
            default:
                errors.append(
                    JobFileError(
                        item.keyPosition,
                        "unknown key \(ConfigNode.quotedKey(item.key)) in retry.backoff\(suggestion(for: item.key, among: ["initial", "max", "multiplier"]))",
                        expected: "one of initial, max, multiplier"))
            }
        }
        if policy.maxBackoff < policy.initialBackoff {
            errors.append(
                JobFileError(
                    maxPosition ?? node.position, "retry.backoff.max is shorter than retry.backoff.initial",
                    expected: "max ≥ initial"))
        }
    }
}
