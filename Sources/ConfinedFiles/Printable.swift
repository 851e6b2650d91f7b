#if canImport(Glibc)
    import Glibc
#endif

/// Text that came from outside (a file name, a value) made safe to print on one line: control
/// characters, including newline and ESC, become `\n`, `\t` or `\u{1B}`; a backslash is doubled.
public enum Printable {
    /// `text` escaped; longer texts are cut to `limit` characters with `…`.
    public static func escaped(_ text: String, limit: Int = 512) -> String {
        var out = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit {
                out += "…"
                break
            }
            count += 1
            switch scalar {
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case "\\": out += "\\\\"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || (0x80..<0xA0).contains(scalar.value) {
                    out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
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
