import Foundation

/// The small XML reader the S3 client needs: S3 answers are plain trees of elements with text
/// (no mixed content, no attributes that matter, no DTD). Namespaces and attributes are
/// ignored, the five predefined entities and numeric character references are decoded,
/// comments, processing instructions and CDATA sections are handled. Anything else malformed
/// is an error rather than a guess.
struct S3XMLElement: Sendable, Equatable {
    var name: String
    var text: String
    var children: [S3XMLElement]

    /// The first child named `name`.
    func child(_ name: String) -> S3XMLElement? { children.first { $0.name == name } }
    /// Every child named `name`, in order.
    func all(_ name: String) -> [S3XMLElement] { children.filter { $0.name == name } }
    /// The text of the first child named `name`.
    func text(_ name: String) -> String? { child(name)?.text }

    struct Malformed: Error, CustomStringConvertible {
        let offset: Int
        let reason: String
        var description: String { "malformed XML at byte \(offset): \(reason)" }
    }

    /// Parses a document and returns its root element.
    static func parse(_ data: Data) throws -> S3XMLElement {
        var parser = Parser(bytes: [UInt8](data))
        return try parser.document()
    }

    private struct Parser {
        let bytes: [UInt8]
        var i = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func document() throws -> S3XMLElement {
            try skipMisc()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "<") else { throw fail("no root element") }
            let root = try element()
            try skipMisc()
            guard i == bytes.count else { throw fail("content after the root element") }
            return root
        }

        func fail(_ reason: String) -> Malformed { Malformed(offset: i, reason: reason) }

        func starts(_ s: String) -> Bool {
            let u = Array(s.utf8)
            return i + u.count <= bytes.count && Array(bytes[i..<(i + u.count)]) == u
        }

        mutating func skip(until terminator: String) throws {
            let u = Array(terminator.utf8)
            while i + u.count <= bytes.count {
                if Array(bytes[i..<(i + u.count)]) == u {
                    i += u.count
                    return
                }
                i += 1
            }
            throw fail("unterminated construct (missing \(terminator))")
        }

        mutating func skipWhitespace() {
            while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
        }

        /// Whitespace, the XML declaration, comments, processing instructions, a doctype.
        mutating func skipMisc() throws {
            while true {
                skipWhitespace()
                if starts("<?") {
                    try skip(until: "?>")
                } else if starts("<!--") {
                    try skip(until: "-->")
                } else if starts("<!DOCTYPE") {
                    try skip(until: ">")
                } else {
                    return
                }
            }
        }

        mutating func name() throws -> String {
            let start = i
            while i < bytes.count, ![0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ">"), UInt8(ascii: "/"), UInt8(ascii: "=")].contains(bytes[i]) {
                i += 1
            }
            guard i > start else { throw fail("expected a name") }
            let full = String(decoding: bytes[start..<i], as: UTF8.self)
            // Drop a namespace prefix: S3 documents use a default namespace only.
            return full.split(separator: ":").last.map(String.init) ?? full
        }

        mutating func element() throws -> S3XMLElement {
            i += 1  // "<"
            let tag = try name()
            // Attributes are skipped (values may contain '>' only when quoted).
            while true {
                skipWhitespace()
                guard i < bytes.count else { throw fail("unterminated start tag <\(tag)>") }
                if bytes[i] == UInt8(ascii: ">") {
                    i += 1
                    break
                }
                if starts("/>") {
                    i += 2
                    return S3XMLElement(name: tag, text: "", children: [])
                }
                _ = try name()
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "=") else { throw fail("attribute without value in <\(tag)>") }
                i += 1
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") || bytes[i] == UInt8(ascii: "'") else {
                    throw fail("unquoted attribute value in <\(tag)>")
                }
                let quote = bytes[i]
                i += 1
                while i < bytes.count, bytes[i] != quote { i += 1 }
                guard i < bytes.count else { throw fail("unterminated attribute value in <\(tag)>") }
                i += 1
            }
            var text = [UInt8]()
            var children: [S3XMLElement] = []
            while true {
                guard i < bytes.count else { throw fail("element <\(tag)> is not closed") }
                if starts("</") {
                    i += 2
                    let closing = try name()
                    skipWhitespace()
                    guard closing == tag, i < bytes.count, bytes[i] == UInt8(ascii: ">") else {
                        throw fail("</\(closing)> does not close <\(tag)>")
                    }
                    i += 1
                    let decoded = try decodeEntities(text)
                    let trimmed = children.isEmpty ? decoded : decoded.trimmingCharacters(in: .whitespacesAndNewlines)
                    return S3XMLElement(name: tag, text: trimmed, children: children)
                } else if starts("<!--") {
                    try skip(until: "-->")
                } else if starts("<![CDATA[") {
                    i += 9
                    let start = i
                    try skip(until: "]]>")
                    // Entities are not decoded inside CDATA: escape '&' so the later pass keeps it.
                    for b in bytes[start..<(i - 3)] {
                        if b == UInt8(ascii: "&") { text += Array("&amp;".utf8) } else { text.append(b) }
                    }
                } else if starts("<?") {
                    try skip(until: "?>")
                } else if bytes[i] == UInt8(ascii: "<") {
                    children.append(try element())
                } else {
                    text.append(bytes[i])
                    i += 1
                }
            }
        }

        func decodeEntities(_ raw: [UInt8]) throws -> String {
            guard raw.contains(UInt8(ascii: "&")) else { return String(decoding: raw, as: UTF8.self) }
            var out = [UInt8]()
            var j = 0
            while j < raw.count {
                guard raw[j] == UInt8(ascii: "&") else {
                    out.append(raw[j])
                    j += 1
                    continue
                }
                guard let end = raw[j...].firstIndex(of: UInt8(ascii: ";")), end - j <= 12 else {
                    throw fail("bare '&' in text")
                }
                let entity = String(decoding: raw[(j + 1)..<end], as: UTF8.self)
                switch entity {
                case "amp": out.append(UInt8(ascii: "&"))
                case "lt": out.append(UInt8(ascii: "<"))
                case "gt": out.append(UInt8(ascii: ">"))
                case "quot": out.append(UInt8(ascii: "\""))
                case "apos": out.append(UInt8(ascii: "'"))
                default:
                    let scalarValue: UInt32?
                    if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                        scalarValue = UInt32(entity.dropFirst(2), radix: 16)
                    } else if entity.hasPrefix("#") {
                        scalarValue = UInt32(entity.dropFirst(1))
                    } else {
                        scalarValue = nil
                    }
                    guard let v = scalarValue, let scalar = Unicode.Scalar(v) else {
                        throw fail("unknown entity &\(entity);")
                    }
                    out += Array(String(Character(scalar)).utf8)
                }
                j = end + 1
            }
            return String(decoding: out, as: UTF8.self)
        }
    }
}

/// Escapes text for an XML element's content.
func s3XMLEscaped(_ text: String) -> String {
    var out = ""
    for c in text {
        switch c {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        default: out.append(c)
        }
    }
    return out
}
