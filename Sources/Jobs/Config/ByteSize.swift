/// Parses configuration byte sizes: `512`, `512B`, `10kB`, `10MB`, `1.5GB`, `64KiB`, `1GiB`, `2TiB`, `1PB`.
///
/// SI suffixes (kB/KB, MB, GB, TB, PB) are powers of 1000, IEC suffixes (KiB, MiB, GiB, TiB, PiB) powers
/// of 1024, as `df -H`/`df -h` and systemd do; a bare integer is bytes. Fractions are rounded down.
public enum ByteSize {
    public static let expected = "a size like 512, 10MB, 1.5GB, 64KiB, 1GiB (SI = 1000, IEC = 1024)"

    private static let units: [String: Double] = [
        "": 1, "B": 1,
        "k": 1e3, "kB": 1e3, "K": 1e3, "KB": 1e3, "MB": 1e6, "M": 1e6, "GB": 1e9, "G": 1e9, "TB": 1e12, "T": 1e12,
        "PB": 1e15, "P": 1e15,
        "KiB": 1024, "MiB": 1_048_576, "GiB": 1_073_741_824, "TiB": 1_099_511_627_776, "PiB": 1_125_899_906_842_624,
    ]

    public static func parse(_ text: String) -> Result<Int64, ConfigValueError> {
        if text.first == "-" { return .failure(ConfigValueError(offset: 0, message: "negative sizes are not allowed")) }
        let numberText = text.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
        guard !numberText.isEmpty, numberText.filter({ $0 == "." }).count <= 1, numberText.first != ".",
            numberText.last != ".", let number = Double(String(numberText))
        else {
            return .failure(ConfigValueError(offset: 0, message: "size must start with a number"))
        }
        let afterNumber = text[numberText.endIndex...]
        let unit = String(afterNumber.drop { $0 == " " })
        let unitStart = numberText.count + (afterNumber.count - unit.count)  // in characters, for the error's column
        guard let multiplier = units[unit] else {
            return .failure(ConfigValueError(offset: unitStart, message: "unknown size unit \(ShownText.value(unit))"))
        }
        if unit.isEmpty || unit == "B", numberText.contains(".") {
            return .failure(ConfigValueError(offset: 0, message: "a size in bytes must be a whole number"))
        }
        let value = number * multiplier
        guard value < 9.2e18 else { return .failure(ConfigValueError(offset: 0, message: "size too large")) }
        return .success(Int64(value.rounded(.down)))
    }

    /// Formats bytes with an IEC suffix when exact (`10MiB`), else in bytes.
    /// Bytes for people, rounded (`27.4 MiB`), for summaries and progress lines; `format` is the
    /// exact form for config files.
    public static func human(_ bytes: Int64) -> String {
        var value = Double(bytes)
        for unit in ["B", "KiB", "MiB", "GiB"] {
            if value < 1024 { return unit == "B" ? "\(bytes) B" : "\(String(format: "%.1f", value)) \(unit)" }
            value /= 1024
        }
        return "\(String(format: "%.1f", value)) TiB"
    }

    public static func format(_ bytes: Int64) -> String {
        for (suffix, size) in [("PiB", Int64(1) << 50), ("TiB", Int64(1) << 40), ("GiB", Int64(1) << 30), ("MiB", Int64(1) << 20), ("KiB", Int64(1) << 10)]
        where bytes >= size && bytes % size == 0 {
            return "\(bytes / size)\(suffix)"
        }
        return "\(bytes)"
    }

    /// A bound as the docs write it: the shorter of a whole binary unit (`1KiB`) and a whole
    /// decimal unit (`10TB`), else bytes (`1B`).
    public static func decimal(_ bytes: Int64) -> String {
        var candidates = ["\(bytes)B", format(bytes)]
        for (suffix, size) in [("PB", Int64(1e15)), ("TB", Int64(1e12)), ("GB", Int64(1e9)), ("MB", Int64(1e6)), ("KB", Int64(1e3))]
        where bytes >= size && bytes % size == 0 {
            candidates.append("\(bytes / size)\(suffix)")
            break
        }
        return candidates.filter { $0.last == "B" }.min { $0.count < $1.count } ?? "\(bytes)B"
    }
}
