import Foundation

/// Strict decoder from YAML text to `JobFile`: unknown keys, wrong types, bad values and missing
/// keys are all collected as positioned `JobFileError`s.
struct JobFileDecoder {
    let file: String
    var errors: [JobFileError] = []

    init(file: String) { self.file = file }

    static let topLevelKeys = ["name", "kind", "description", "enabled", "schedule", "timeZone", "timeout", "retry",
                               "concurrencyPolicy", "lockWait", "startingDeadline", "randomizedDelay", "accounts", "params"]
    static let namePattern = "letters, digits, '-' and '_', starting with a letter or digit, at most 64 characters"

    mutating func decode(yaml: String) throws(JobFileErrors) -> JobFile {
        let origin = SourcePosition(file: file, line: 1, column: 1)
        guard let root = try ConfigNode.parse(yaml: yaml, file: file) else {
            throw JobFileErrors([JobFileError(origin, "job file is empty", expected: "a mapping with name, kind and params")])
        }
        guard case .mapping(let entries) = root.value else {
            throw JobFileErrors([JobFileError(root.position, "a job file must be a mapping, found \(root.typeName)",
                                              expected: "keys such as name:, kind:, schedule:, params:")])
        }
        var fields: [String: ConfigNode.Entry] = [:]
        for entry in entries {
            if Self.topLevelKeys.contains(entry.key) {
                fields[entry.key] = entry
            } else {
                errors.append(JobFileError(entry.keyPosition, "unknown key '\(entry.key)'\(suggestion(for: entry.key, among: Self.topLevelKeys))",
                                           expected: "one of " + Self.topLevelKeys.joined(separator: ", ")))
            }
        }
        func value(_ key: String) -> ConfigNode? {
            guard let node = fields[key]?.value, !node.isNull else { return nil }
            return node
        }
        func missing(_ key: String, _ expected: String) {
            if let entry = fields[key] {
                errors.append(JobFileError(entry.value.position, "'\(key)' must have a value", expected: expected))
            } else {
                errors.append(JobFileError(root.position, "missing required key '\(key)'", expected: "\(key): \(expected)"))
            }
        }

        // name
        var name = ""
        var namePosition = root.position
        if let node = value("name") {
            namePosition = node.position
            if let text = string(node, key: "name", expected: Self.namePattern) {
                if Self.isValidName(text) { name = text } else {
                    errors.append(JobFileError(node.position, "invalid job name '\(text)'", expected: Self.namePattern))
                }
            }
        } else { missing("name", Self.namePattern) }

        // kind
        var kind: JobKind?
        if let node = value("kind") {
            if let text = string(node, key: "kind", expected: "one of \(JobKind.expectedList)") {
                kind = JobKind(rawValue: text)
                if kind == nil {
                    errors.append(JobFileError(node.position, "unknown job kind '\(text)'\(suggestion(for: text, among: JobKind.allCases.map(\.rawValue)))",
                                               expected: "one of \(JobKind.expectedList)"))
                }
            }
        } else { missing("kind", "one of \(JobKind.expectedList)") }

        let description = value("description").flatMap { string($0, key: "description", expected: "a string") }
        let enabled = value("enabled").flatMap { bool($0, key: "enabled") } ?? true

        // schedule and time zone
        var timeZone: TimeZone?
        if let node = value("timeZone"), let text = string(node, key: "timeZone", expected: "an IANA time zone such as UTC or Europe/Berlin") {
            timeZone = TimeZone(identifier: text)
            if timeZone == nil {
                errors.append(JobFileError(node.position, "unknown time zone '\(text)'", expected: "an IANA time zone such as UTC or Europe/Berlin"))
            }
        }
        var schedule: CronSchedule?
        if let node = value("schedule"), let text = string(node, key: "schedule", expected: CronSchedule.expected) {
            switch CronSchedule.parse(text) {
            case .success(let parsed): schedule = parsed
            case .failure(let error):
                errors.append(JobFileError(node.position(atOffset: error.offset), "bad cron schedule '\(text)': \(error.message)",
                                           expected: CronSchedule.expected))
            }
        }

        let timeout = duration("timeout", value("timeout"), range: 1...(7 * 86_400)) ?? .seconds(3600)
        let lockWait = duration("lockWait", value("lockWait"), range: 0...(7 * 86_400)) ?? .zero
        let startingDeadline = duration("startingDeadline", value("startingDeadline"), range: 1...(366 * 86_400))
        let randomizedDelay = duration("randomizedDelay", value("randomizedDelay"), range: 0...(86_400)) ?? .zero

        var policy = ConcurrencyPolicy.forbid
        if let node = value("concurrencyPolicy") {
            let expected = "one of Forbid, Allow, Replace"
            if let text = string(node, key: "concurrencyPolicy", expected: expected) {
                if let parsed = ConcurrencyPolicy(rawValue: text) { policy = parsed } else {
                    errors.append(JobFileError(node.position, "unknown concurrencyPolicy '\(text)'\(suggestion(for: text, among: ConcurrencyPolicy.allCases.map(\.rawValue)))",
                                               expected: expected))
                }
            }
        }

        let retry = decodeRetry(value("retry"))

        var accounts: [Int64] = [0]
        if let node = value("accounts") {
            var errs = errors
            if case .list(let items)? = ParamDecoder.decode(node, as: .list(.int), range: 0...Double(Int32.max), name: "accounts", errors: &errs) {
                let ids = items.compactMap { if case .int(let id) = $0 { return id }; return nil }
                if ids.isEmpty {
                    errs.append(JobFileError(node.position, "accounts must not be empty", expected: "a list of account ids such as [0]"))
                } else if Set(ids).count != ids.count {
                    errs.append(JobFileError(node.position, "an account is listed twice", expected: "each account id once"))
                } else {
                    accounts = ids
                }
            }
            errors = errs
        }

        // params: validated against the kind's schema when the kind is known.
        let paramsNode = fields["params"]?.value
        var params = JobParams(kind: kind?.rawValue ?? "", values: [:], fallback: root.position)
        if let kind {
            let (validated, paramErrors) = kind.paramsSchema.validate(paramsNode, fallback: fields["params"]?.keyPosition ?? root.position)
            params = validated
            errors += paramErrors
        }

        if !errors.isEmpty { throw JobFileErrors(errors) }
        return JobFile(name: name, kind: kind!, description: description, enabled: enabled, schedule: schedule,
                       timeZone: timeZone, timeout: timeout, retry: retry, concurrencyPolicy: policy, lockWait: lockWait,
                       startingDeadline: startingDeadline, randomizedDelay: randomizedDelay, accounts: accounts,
                       params: params, rawParams: paramsNode, source: file, namePosition: namePosition)
    }

    static func isValidName(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, text.unicodeScalars.count <= 64 else { return false }
        func alnum(_ c: Unicode.Scalar) -> Bool { c.isASCII && (CharacterSet.alphanumerics.contains(c)) }
        return alnum(first) && text.unicodeScalars.allSatisfy { alnum($0) || $0 == "-" || $0 == "_" }
    }

    private mutating func string(_ node: ConfigNode, key: String, expected: String) -> String? {
        guard case .scalar(let text, .string) = node.value else {
            errors.append(JobFileError(node.position, "'\(key)' has the wrong type: found \(node.typeName)", expected: expected))
            return nil
        }
        return text
    }

    private mutating func bool(_ node: ConfigNode, key: String) -> Bool? {
        var errs = errors
        defer { errors = errs }
        if case .bool(let value)? = ParamDecoder.decode(node, as: .bool, range: nil, name: key, errors: &errs) { return value }
        return nil
    }

    private mutating func duration(_ key: String, _ node: ConfigNode?, range: ClosedRange<Double>) -> Duration? {
        guard let node else { return nil }
        var errs = errors
        defer { errors = errs }
        if case .duration(let value)? = ParamDecoder.decode(node, as: .duration, range: range, name: key, errors: &errs) { return value }
        return nil
    }

    private mutating func decodeRetry(_ node: ConfigNode?) -> RetryPolicy {
        var policy = RetryPolicy()
        guard let node else { return policy }
        guard case .mapping(let entries) = node.value else {
            errors.append(JobFileError(node.position, "'retry' has the wrong type: found \(node.typeName)",
                                       expected: "a mapping with backoffLimit and backoff"))
            return policy
        }
        for entry in entries {
            switch entry.key {
            case "backoffLimit":
                var errs = errors
                if case .int(let limit)? = ParamDecoder.decode(entry.value, as: .int, range: 0...100, name: "retry.backoffLimit", errors: &errs) {
                    policy.backoffLimit = Int(limit)
                }
                errors = errs
            case "backoff":
                guard case .mapping(let inner) = entry.value.value else {
                    errors.append(JobFileError(entry.value.position, "'retry.backoff' has the wrong type: found \(entry.value.typeName)",
                                               expected: "a mapping with initial, max, multiplier"))
                    continue
                }
                var maxPosition: SourcePosition?
                for item in inner {
                    var errs = errors
                    switch item.key {
                    case "initial":
                        if case .duration(let value)? = ParamDecoder.decode(item.value, as: .duration, range: 0...86_400, name: "retry.backoff.initial", errors: &errs) {
                            policy.initialBackoff = value
                        }
                    case "max":
                        maxPosition = item.value.position
                        if case .duration(let value)? = ParamDecoder.decode(item.value, as: .duration, range: 0...(7 * 86_400), name: "retry.backoff.max", errors: &errs) {
                            policy.maxBackoff = value
                        }
                    case "multiplier":
                        if case .double(let value)? = ParamDecoder.decode(item.value, as: .double, range: 1...10, name: "retry.backoff.multiplier", errors: &errs) {
                            policy.multiplier = value
                        }
                    default:
                        errs.append(JobFileError(item.keyPosition, "unknown key '\(item.key)' in retry.backoff\(suggestion(for: item.key, among: ["initial", "max", "multiplier"]))",
                                                 expected: "one of initial, max, multiplier"))
                    }
                    errors = errs
                }
                if policy.maxBackoff < policy.initialBackoff {
                    errors.append(JobFileError(maxPosition ?? entry.value.position, "retry.backoff.max is shorter than retry.backoff.initial",
                                               expected: "max ≥ initial"))
                }
            default:
                errors.append(JobFileError(entry.keyPosition, "unknown key '\(entry.key)' in retry\(suggestion(for: entry.key, among: ["backoffLimit", "backoff"]))",
                                           expected: "one of backoffLimit, backoff"))
            }
        }
        return policy
    }
}
