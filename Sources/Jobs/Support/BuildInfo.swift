/// What this build of jobrun is: printed by `jobrun --version` and exported as
/// `jobrun_build_info` so a dashboard can tell which release wrote a metrics file.
public enum BuildInfo {
    /// The release version.
    public static let version = "0.2.0"

    /// The Swift compiler that built it.
    public static var swift: String {
        #if compiler(>=6.3)
            return "6.3"
        #elseif compiler(>=6.2)
            return "6.2"
        #elseif compiler(>=6.1)
            return "6.1"
        #else
            return "6.0"
        #endif
    }

    /// The platform it was built for.
    public static var platform: String {
        #if os(Linux)
            #if arch(x86_64)
                return "linux-x86_64"
            #elseif arch(arm64)
                return "linux-aarch64"
            #else
                return "linux"
            #endif
        #elseif os(macOS)
            return "macos"
        #else
            return "other"
        #endif
    }

    /// `jobrun 0.2.0 (swift 6.3, linux-x86_64)`.
    public static var line: String { "jobrun \(version) (swift \(swift), \(platform))" }
}
