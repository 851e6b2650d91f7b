/// Decodes one `ConfigNode` as a `ParamType`, collecting positioned errors.
enum ParamDecoder {
    /// `bareSeconds`: a duration may still be a bare number of seconds, its former spelling
    /// (read with a deprecation warning).
    static func decode(
        _ node: ConfigNode, as type: ParamType, range: ClosedRange<Double>?, name: String,
        errors: inout [JobFileError], bareSeconds: Bool = false
    ) -> ParamValue? {
        func fail(_ message: String, at position: SourcePosition? = nil) -> ParamValue? {
            errors.append(JobFileError(position ?? node.position, message, expected: type.description))
            return nil
        }
        func wrongType() -> ParamValue? { fail("'\(name)' has the wrong type: found \(node.typeName)") }
        func checkRange(_ number: Double, shown: String) -> Bool {
            guard let range, !range.contains(number) else { return true }
            let bounds = "\(format(range.lowerBound, type))…\(format(range.upperBound, type))"
            errors.append(JobFileError(node.position, "'\(name)' is out of range: \(shown)", expected: "a value in \(bounds)"))
            return false
        }
        switch type {
        case .string:
            guard case .scalar(let text, .string) = node.value else { return wrongType() }
            return .string(text)
        case .int:
            guard case .scalar(let text, .int) = node.value else { return wrongType() }
            guard let value = Int64(text.replacingOccurrences(of: "_", with: "")) else {
                return fail("'\(name)' is not a decimal integer: \(ShownText.value(text))")
            }
            return checkRange(Double(value), shown: ShownText.value(text)) ? .int(value) : nil
        case .double:
            guard case .scalar(let text, let scalarType) = node.value, scalarType == .int || scalarType == .float,
                let value = Double(text), value.isFinite
            else { return wrongType() }
            return checkRange(value, shown: ShownText.value(text)) ? .double(value) : nil
        case .bool:
            guard case .scalar(let text, .bool) = node.value else { return wrongType() }
            switch text.lowercased() {
            case "true": return .bool(true)
            case "false": return .bool(false)
            default: return fail("'\(name)': write true or false, not \(ShownText.value(text))")
            }
        case .duration:
            if bareSeconds, case .scalar(let text, let scalarType) = node.value, scalarType == .int || scalarType == .float,
                let seconds = Double(text.replacingOccurrences(of: "_", with: "")), seconds.isFinite, seconds >= 0, seconds < 1e12
            {
                let duration = Duration.milliseconds(Int64((seconds * 1000).rounded()))
                ConfigWarnings.deprecated(
                    node.position, "'\(name)': a bare number of seconds is deprecated; write \(ConfigDuration.format(duration))")
                return checkRange(duration.jobSeconds, shown: ShownText.value(text)) ? .duration(duration) : nil
            }
            guard case .scalar(let text, let scalarType) = node.value, scalarType == .string || scalarType == .int else {
                return wrongType()
            }
            switch ConfigDuration.parse(text) {
            case .success(let duration):
                return checkRange(duration.jobSeconds, shown: ShownText.value(text)) ? .duration(duration) : nil
            case .failure(let error):
                return fail("bad duration \(ShownText.value(text)) for '\(name)': \(error.message)", at: node.position(atOffset: error.offset))
            }
        case .byteSize:
            guard case .scalar(let text, let scalarType) = node.value, scalarType == .string || scalarType == .int else {
                return wrongType()
            }
            switch ByteSize.parse(text) {
            case .success(let bytes):
                return checkRange(Double(bytes), shown: ShownText.value(text)) ? .bytes(bytes) : nil
            case .failure(let error):
                return fail("bad size \(ShownText.value(text)) for '\(name)': \(error.message)", at: node.position(atOffset: error.offset))
            }
        case .oneOf(let words):
            guard case .scalar(let text, .string) = node.value else { return wrongType() }
            guard words.contains(text) else {
                return fail("\(ShownText.value(text)) is not a valid value for '\(name)'\(suggestion(for: text, among: words))")
            }
            return .string(text)
        case .list(let element):
            guard case .sequence(let items) = node.value else {
                // A single scalar is not silently promoted to a list: be explicit.
                return wrongType()
            }
            var values: [ParamValue] = []
            values.reserveCapacity(items.count)
            // Words may be listed once each; checked with a set so long lists decode in linear time.
            var seenWords: Set<ParamValue> = []
            var ok = true
            for item in items {
                if let value = decode(item, as: element, range: range, name: name, errors: &errors) {
                    if case .oneOf = element, !seenWords.insert(value).inserted {
                        errors.append(JobFileError(item.position, "'\(value)' is listed twice in '\(name)'", expected: "each value once"))
                        ok = false
                    }
                    values.append(value)
                } else {
                    ok = false
                }
            }
            return ok ? .list(values) : nil
        case .map(let keys, let valueType):
            guard case .mapping(let entries) = node.value else { return wrongType() }
            var values: [String: ParamValue] = [:]
            var ok = true
            for entry in entries {
                guard keys.contains(entry.key) else {
                    errors.append(
                        JobFileError(
                            entry.keyPosition, "unknown key '\(entry.key)' in '\(name)'\(suggestion(for: entry.key, among: keys))",
                            expected: "one of " + keys.joined(separator: ", ")))
                    ok = false
                    continue
                }
                if let value = decode(entry.value, as: valueType, range: range, name: "\(name).\(entry.key)", errors: &errors) {
                    values[entry.key] = value
                } else {
                    ok = false
                }
            }
            return ok ? .map(values) : nil
        case .section(let schema):
            let (values, sectionErrors) = schema.validate(node, fallback: node.position)
            errors += sectionErrors
            return sectionErrors.isEmpty ? .section(values) : nil
        case .kindParameters:
            guard case .mapping = node.value else { return wrongType() }
            return .map([:])  // the kind named by `kind:` validates them
        case .custom(let custom):
            return custom.decode(node, name, &errors)
        }
    }

    static func format(_ number: Double, _ type: ParamType) -> String {
        switch type {
        case .duration: return ConfigDuration.format(.milliseconds(Int64(number * 1000)))
        case .byteSize: return number == 0 ? "0" : ByteSize.decimal(Int64(number))
        case .list(let element), .map(_, let element): return format(number, element)
        default:
            return number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        }
    }
}
