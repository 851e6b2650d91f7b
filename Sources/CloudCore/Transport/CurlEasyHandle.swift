import CCurl

/// One libcurl easy handle plus its error buffer, reused across transfers (pooled by the loop).
///
/// `@unchecked Sendable`: it is created, used and destroyed only on the transport loop thread
/// (it is never handed to other code), so no concurrent access can happen.
final class CurlEasyHandle: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer
    /// `CURLOPT_ERRORBUFFER` target (CURL_ERROR_SIZE bytes), valid while the handle lives.
    let errorBuffer: UnsafeMutablePointer<CChar>

    init?() {
        guard let raw = curl_easy_init() else { return nil }
        self.raw = raw
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        curl_easy_cleanup(raw)
        errorBuffer.deallocate()
    }

    /// Clears all options for the next transfer; connections stay in the multi's cache.
    func reset() {
        curl_easy_reset(raw)
        errorBuffer[0] = 0
    }

    /// The error buffer's text, or libcurl's generic message for `code`.
    func message(for code: CURLcode) -> String {
        if errorBuffer[0] != 0 { return String(cString: errorBuffer) }
        return String(cString: curl_easy_strerror(code))
    }

    // MARK: typed option setters (the shim's fixed-signature wrappers)

    @discardableResult func set(_ option: CURLoption, _ value: Int) -> CURLcode {
        jr_easy_setopt_long(raw, option, value)
    }
    @discardableResult func set(_ option: CURLoption, offset value: Int64) -> CURLcode {
        jr_easy_setopt_off(raw, option, curl_off_t(value))
    }
    @discardableResult func set(_ option: CURLoption, _ value: String) -> CURLcode {
        // libcurl copies string options (except POSTFIELDS, which is not used here).
        value.withCString { jr_easy_setopt_string(raw, option, $0) }
    }
    @discardableResult func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) -> CURLcode {
        jr_easy_setopt_pointer(raw, option, value)
    }

    func infoLong(_ info: CURLINFO) -> Int {
        var v: Int = 0
        _ = jr_easy_getinfo_long(raw, info, &v)
        return v
    }
    func infoOffset(_ info: CURLINFO) -> Int64 {
        var v: curl_off_t = 0
        _ = jr_easy_getinfo_off(raw, info, &v)
        return Int64(v)
    }
    /// The connection was established (TCP, plus the TLS handshake when there was one).
    var connectionCompleted: Bool {
        guard infoOffset(CURLINFO_CONNECT_TIME_T) > 0 else { return false }
        let tls = infoString(CURLINFO_SCHEME).lowercased() == "https"
        return !tls || infoOffset(CURLINFO_APPCONNECT_TIME_T) > 0
    }

    func infoString(_ info: CURLINFO) -> String {
        var p: UnsafeMutablePointer<CChar>? = nil
        _ = jr_easy_getinfo_string(raw, info, &p)
        return p.map { String(cString: $0) } ?? ""
    }
}
