#if canImport(Glibc)
    import Glibc
#endif

/// Text that came from outside (a file name, a value) made safe to print on one line: control
/// characters become `\n`, `\r`, `\t`, `\e` or `\u{…}`, and so do the bidirectional overrides
/// that reorder what a terminal shows, so a name cannot forge a line or drive the terminal.
public enum Printable {
    /// `text` escaped; longer texts are cut to `limit` characters with `…`.
    public static func escaped(_ text: String, limit: Int = 512) -> String {
        if text.unicodeScalars.count <= limit, !text.unicodeScalars.contains(where: needsEscape) { return text }
        var out = ""
        for (count, scalar) in text.unicodeScalars.enumerated() {
            if count == limit {
                out += "…"
                break
            }
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{1B}": out += "\\e"
            case _ where needsEscape(scalar): out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Control characters, and the bidirectional overrides that reorder what a terminal shows.
    public static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069, 0xFEFF: return true
        default: return false
        }
    }

    /// A path for a message: escaped, never cut.
    public static func path(_ path: String) -> String { escaped(path, limit: Int.max) }

    /// `ENOSPC (No space left on device)`: the errno's name and its text.
    public static func errno(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        guard let name = errnoNames[code] else { return "\(text) (errno \(code))" }
        return "\(name) (\(text))"
    }

    private static let errnoNames: [Int32: String] = [
        EPERM: "EPERM", ENOENT: "ENOENT", EIO: "EIO", EBADF: "EBADF", EAGAIN: "EAGAIN", ENOMEM: "ENOMEM",
        EACCES: "EACCES", EBUSY: "EBUSY", EEXIST: "EEXIST", EXDEV: "EXDEV", ENOTDIR: "ENOTDIR", EISDIR: "EISDIR",
        EINVAL: "EINVAL", EMFILE: "EMFILE", ENFILE: "ENFILE", ETXTBSY: "ETXTBSY", EFBIG: "EFBIG", ENOSPC: "ENOSPC",
        EROFS: "EROFS", EMLINK: "EMLINK", ENAMETOOLONG: "ENAMETOOLONG", ELOOP: "ELOOP", ENOTEMPTY: "ENOTEMPTY",
        EDQUOT: "EDQUOT", ENXIO: "ENXIO", ENOSYS: "ENOSYS", EINTR: "EINTR",
    ]
}
