import CCurl

/// libcurl's process-wide initialisation, done once, lazily and thread-safely (a `static let`).
enum CurlGlobal {
    /// The result of libcurl's global initialisation, with `CurlMemory`'s functions; read it
    /// before creating any handle.
    static let initialized: CURLcode = CurlMemory.globalInit(flags: jr_curl_global_default())

    /// Runs the global initialisation if not done yet; fails if it failed.
    static func ensure() throws {
        guard initialized == CURLE_OK else {
            throw TransportError.other(code: Int(initialized.rawValue), reason: "curl_global_init failed")
        }
    }

    /// libcurl's version string, e.g. "7.88.1".
    static var version: String {
        guard let info = jr_curl_version_info(), let v = info.pointee.version else { return "?" }
        return String(cString: v)
    }
}
