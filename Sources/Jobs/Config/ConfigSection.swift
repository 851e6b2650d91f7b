/// One section of a file jobrun reads — a job file's top level, its `retry:`, a section of
/// `cluster.yaml`, an account's `config.yaml` — declared like a job kind's parameters: each key
/// once, as a static typed `Param`, with its default, range, environment variable and doc line.
///
/// `SectionSchema` decodes every section alike, so every error is `file:line:column` with
/// "did you mean", and `docs/configuration.md` is printed from the same declarations.
public protocol ConfigSection: Sendable {
    /// The section's name as errors and the reference write it: `retry`, `postgres`,
    /// `objectStorage.sharedMedia`; empty for a file's top level.
    static var path: String { get }
    /// The keys the section accepts, in the order the reference lists them.
    static var parameters: [any JobParameter] { get }
    /// Rules that span several keys (at least one limit; a maximum not below a minimum), so that
    /// every command that reads the file applies them alike.
    static func check(_ values: JobParams) -> [JobFileError]
    /// The key a plain value written for the whole section gives (`tls: require` for
    /// `tls: {mode: require}`), or nil when the section must be a mapping.
    static var shorthand: (any JobParameter)? { get }
}

extension ConfigSection {
    public static func check(_ values: JobParams) -> [JobFileError] { [] }
    public static var shorthand: (any JobParameter)? { nil }

    /// Validates the section's node (nil or null: every key takes its default), the
    /// `environment`'s variables given over the file's values.
    public static func validate(
        _ node: ConfigNode?, fallback: SourcePosition, environment: [String: String] = [:]
    ) -> (JobParams, [JobFileError]) {
        SectionSchema(Self.self).validate(node, fallback: fallback, environment: environment)
    }
}

/// How a section's problems name the section: a section of a file, or a job kind's `params:`.
public enum SectionSubject: Sendable, Hashable {
    /// A file's section by its path (empty for the top level).
    case section(String)
    /// The `params:` of a job kind.
    case kind(String)
}

/// The keys a section accepts and its cross-key rules, as the decoder sees them. Unknown keys,
/// wrong types, out-of-range values and missing required keys are rejected with positions.
public struct SectionSchema: Sendable, Hashable, CustomStringConvertible {
    public let subject: SectionSubject
    public let params: [ParamSpec]
    /// The key a plain value for the whole section gives, if any.
    public let shorthand: String?
    let check: @Sendable (JobParams) -> [JobFileError]

    public init(
        subject: SectionSubject, params: [ParamSpec], shorthand: String? = nil,
        check: @escaping @Sendable (JobParams) -> [JobFileError] = { _ in [] }
    ) {
        self.subject = subject
        self.params = params
        self.shorthand = shorthand
        self.check = check
    }

    /// The schema of a section type.
    public init<Section: ConfigSection>(_ section: Section.Type) {
        self.init(
            subject: .section(Section.path), params: Section.parameters.map(\.spec), shorthand: Section.shorthand?.spec.name,
            check: Section.check)
    }

    /// The schema of a kind: its name, its declared parameters and its cross-parameter rules.
    public init(_ kind: any JobKind) {
        self.init(subject: .kind(kind.name), params: kind.parameters.map(\.spec), check: type(of: kind).check)
    }

    /// The section's name, or the kind's.
    public var name: String {
        switch subject {
        case .section(let path): return path
        case .kind(let kind): return kind
        }
    }

    public var description: String { name }

    public static func == (a: SectionSchema, b: SectionSchema) -> Bool { a.subject == b.subject && a.params == b.params }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(subject)
        hasher.combine(params)
    }

    /// Whether any of the section's variables (its nested sections' included) is set.
    func anyVariableSet(in environment: [String: String]) -> Bool {
        params.contains { spec in
            if case .section(let child) = spec.type, child.anyVariableSet(in: environment) { return true }
            return spec.environment.map { !(environment[$0] ?? "").isEmpty } ?? false
        }
    }

    /// A key's full name for messages: `retry.backoff.max`.
    func qualified(_ key: String) -> String {
        if case .section(let path) = subject, !path.isEmpty { return path + "." + key }
        return key
    }

    private func unknownKeyMessage(_ key: String, suggestion: String) -> String {
        switch subject {
        case .kind(let kind): return "unknown parameter \(ConfigNode.quotedKey(key)) for kind \(kind)\(suggestion)"
        case .section(let path) where path.isEmpty: return "unknown key \(ConfigNode.quotedKey(key))\(suggestion)"
        case .section(let path): return "unknown key \(ConfigNode.quotedKey(key)) in \(path)\(suggestion)"
        }
    }

    private var isKind: Bool {
        if case .kind = subject { return true }
        return false
    }

    private var noun: String { isKind ? "parameter" : "key" }

    /// A variable's value as the decoder reads it: a plain scalar, typed as YAML would type it.
    private static func variableNode(_ name: String, _ text: String) -> ConfigNode {
        let type: ConfigNode.ScalarType
        if Int64(text) != nil {
            type = .int
        } else if text == "true" || text == "false" {
            type = .bool
        } else if Double(text) != nil {
            type = .float
        } else {
            type = .string
        }
        return ConfigNode(value: .scalar(text, type), position: SourcePosition(file: "$" + name, line: 1, column: 1))
    }

    /// Validates a section's mapping (nil or null = empty) and collects every error, the
    /// section's cross-key rules included; a set variable of `environment` wins over the file.
    /// `fallback` is where to report a missing key when there is no node.
    public func validate(
        _ node: ConfigNode?, fallback: SourcePosition, environment: [String: String] = [:]
    ) -> (JobParams, [JobFileError]) {
        var errors: [JobFileError] = []
        var entries: [ConfigNode.Entry] = []
        var where_ = fallback
        if let node, !node.isNull {
            where_ = node.position
            if case .mapping(let list) = node.value {
                entries = list
            } else if let shorthand, case .scalar = node.value {
                entries = [ConfigNode.Entry(key: shorthand, keyPosition: node.position, value: node)]
            } else {
                let what = isKind ? "params must be a mapping," : "'\(name)' has the wrong type:"
                errors.append(
                    JobFileError(
                        node.position, "\(what) found \(node.typeName)",
                        expected: isKind ? "a mapping of parameters for kind \(name)" : ParamType.section(self).description))
            }
        }
        // The index makes every key's look-up constant time, so a mapping of many keys decodes in
        // linear time.
        let index = Dictionary(params.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let formerNames = Dictionary(params.compactMap { spec in spec.formerName.map { ($0, spec) } }, uniquingKeysWith: { first, _ in first })
        let expectedKeys = params.isEmpty ? "no \(noun)s" : "one of " + params.map(\.name).joined(separator: ", ")
        let names = params.map(\.name)
        var given: [String: (node: ConfigNode, former: Bool)] = [:]
        var positions: [String: SourcePosition] = [:]
        // Past the errors a message prints, unknown keys are counted, not described: a mapping of
        // a hundred thousand stray keys costs a hundred thousand look-ups, not as many messages.
        var unlisted: (first: SourcePosition, count: Int)?
        var unknown = 0
        var suggested = false
        for entry in entries {
            guard let spec = index[entry.key] ?? formerNames[entry.key] else {
                unknown += 1
                if unknown <= JobFileErrors.printedLimit {
                    let close = suggestion(for: entry.key, among: names)
                    suggested = suggested || !close.isEmpty
                    errors.append(JobFileError(entry.keyPosition, unknownKeyMessage(entry.key, suggestion: close), expected: expectedKeys))
                } else {
                    unlisted = (unlisted?.first ?? entry.keyPosition, (unlisted?.count ?? 0) + 1)
                }
                continue
            }
            let former = spec.name != entry.key
            if given[spec.name] != nil {
                errors.append(JobFileError(entry.keyPosition, "'\(qualified(spec.name))' is given twice", expected: "each key once"))
                continue
            }
            if former {
                ConfigWarnings.deprecated(entry.keyPosition, "'\(qualified(entry.key))' is deprecated: write '\(spec.name)' (\(spec.type))")
            }
            given[spec.name] = (entry.value, former)
            positions[spec.name] = entry.value.position
        }
        if let unlisted {
            errors.append(
                JobFileError(unlisted.first, "\(unlisted.count) more unknown keys\(name.isEmpty ? "" : " in " + name), from here on", expected: expectedKeys))
        }
        if case .section(let path) = subject, path.isEmpty, !entries.isEmpty, given.isEmpty, !suggested {
            // Not one key of a top level is known, or close to one: this is not such a file at
            // all (a password database reached through a link, say). Nothing of it is shown, not
            // even its keys.
            return (
                JobParams(kind: name, values: [:], fallback: where_, declared: Set(index.keys)),
                [JobFileError(where_, "this does not look like the file expected here: none of its \(entries.count) keys is known", expected: expectedKeys)]
            )
        }
        var values: [String: ParamValue] = [:]
        for spec in params {
            var node = given[spec.name]?.node
            if let variable = spec.environment, let text = environment[variable], !text.isEmpty {
                node = Self.variableNode(variable, text)
                positions[spec.name] = node?.position
            }
            if case .section(let child) = spec.type {
                let present = (node.map { !$0.isNull } ?? false) || child.anyVariableSet(in: environment)
                guard present || !spec.optionalSection else { continue }
                let (sectionValues, childErrors) = child.validate(node, fallback: node?.position ?? where_, environment: environment)
                errors += childErrors
                if childErrors.isEmpty { values[spec.name] = .section(sectionValues) }
                continue
            }
            guard let node, !node.isNull else {
                if spec.required {
                    let message =
                        if node != nil { "\(noun) '\(qualified(spec.name))' must have a value" } else if isKind {
                            "missing required parameter '\(spec.name)' for kind \(name)"
                        } else { "missing required key '\(qualified(spec.name))'" + (spec.environment.map { " (or $\($0))" } ?? "") }
                    errors.append(
                        JobFileError(node?.position ?? where_, message, expected: node == nil ? "\(spec.name): \(spec.type)" : spec.type.description))
                } else if let value = spec.defaultValue {
                    values[spec.name] = value  // absent, or an explicit null: the default applies
                }
                continue
            }
            if let value = ParamDecoder.decode(
                node, as: spec.type, range: spec.range, name: qualified(spec.name), errors: &errors,
                bareSeconds: spec.acceptsBareSeconds || given[spec.name]?.former == true)
            {
                if case .map(let given) = value, case .map(let defaults)? = spec.defaultValue {
                    // A partial map overrides only the keys it names.
                    values[spec.name] = .map(defaults.merging(given) { _, new in new })
                } else {
                    values[spec.name] = value
                }
            }
        }
        let validated = JobParams(kind: name, values: values, positions: positions, fallback: where_, declared: Set(index.keys))
        if errors.isEmpty { errors += check(validated) }
        return (validated, errors)
    }
}
