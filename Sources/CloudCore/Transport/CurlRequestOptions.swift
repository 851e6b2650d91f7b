import CCurl

/// Applies a request and the transport configuration to a (freshly reset) easy handle.
enum CurlRequestOptions {
    /// Sets every option of `transfer`'s request on `easy`. Throws for options libcurl refuses.
    static func apply(
        _ transfer: CurlTransfer, to easy: CurlEasyHandle,
        configuration c: TransportConfiguration
    ) throws {
        let request = transfer.request
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        func check(_ code: CURLcode, _ what: String) throws {
            guard code == CURLE_OK else {
                throw TransportError.invalidRequest("\(what): \(String(cString: curl_easy_strerror(code)))")
            }
        }

        try check(easy.set(CURLOPT_URL, request.url), "URL \(request.url)")
        // Only http(s): no file://, ftp:// … even through redirects.
        try check(easy.set(CURLOPT_PROTOCOLS_STR, "http,https"), "protocols")
        try check(easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https"), "redirect protocols")
        easy.set(CURLOPT_NOSIGNAL, 1)
        easy.set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(easy.errorBuffer))
        easy.set(CURLOPT_WRITEDATA, pointer: context)
        _ = jr_easy_setopt_data_callback(easy.raw, CURLOPT_WRITEFUNCTION, curlWriteCallback)
        easy.set(CURLOPT_HEADERDATA, pointer: context)
        _ = jr_easy_setopt_data_callback(easy.raw, CURLOPT_HEADERFUNCTION, curlHeaderCallback)

        // Method and body.
        let bodyLength = request.body.length
        let hasBody: Bool
        switch request.method {
        case .get:
            easy.set(CURLOPT_HTTPGET, 1)
            hasBody = false
        case .head:
            easy.set(CURLOPT_NOBODY, 1)
            hasBody = false
        case .post:
            easy.set(CURLOPT_POST, 1)
            easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: bodyLength)
            hasBody = true
        case .put:
            easy.set(CURLOPT_UPLOAD, 1)
            easy.set(CURLOPT_INFILESIZE_LARGE, offset: bodyLength)
            hasBody = true
        case .delete:
            easy.set(CURLOPT_CUSTOMREQUEST, "DELETE")
            if bodyLength > 0 {
                easy.set(CURLOPT_UPLOAD, 1)
                easy.set(CURLOPT_INFILESIZE_LARGE, offset: bodyLength)
            }
            hasBody = bodyLength > 0
        }
        if hasBody {
            // One read callback (one `pread`) per part instead of one per 64 KiB, and larger sends.
            if bodyLength > Self.defaultUploadBuffer {
                easy.set(CURLOPT_UPLOAD_BUFFERSIZE, Int(min(bodyLength, Int64(Self.largestUploadBuffer))))
            }
            // Always a read callback: without one libcurl would read stdin.
            easy.set(CURLOPT_READDATA, pointer: context)
            _ = jr_easy_setopt_data_callback(easy.raw, CURLOPT_READFUNCTION, curlReadCallback)
            easy.set(CURLOPT_SEEKDATA, pointer: context)
            _ = jr_easy_setopt_seek_callback(easy.raw, curlSeekCallback)
        }

        // Headers. An empty "Expect:" stops libcurl waiting for 100-continue before a body.
        var list: UnsafeMutablePointer<curl_slist>? = nil
        var lines = request.headers.map(\.description)
        // Not for SigV4: libcurl 7.88 signs the removal line as an empty `expect` header it never
        // sends, so the service's signature would differ; a signed upload keeps 100-continue.
        if hasBody && request.awsSigV4 == nil { lines.append("Expect:") }
        for line in lines {
            guard let extended = curl_slist_append(list, line) else {
                if let list { curl_slist_free_all(list) }
                throw TransportError.invalidRequest("cannot add header \(line)")
            }
            list = extended
        }
        transfer.headerList = list
        if let list { _ = jr_easy_setopt_slist(easy.raw, CURLOPT_HTTPHEADER, list) }

        if let range = request.range { easy.set(CURLOPT_RANGE, range.description) }

        if let signing = request.awsSigV4 {
            try check(easy.set(CURLOPT_AWS_SIGV4, signing.provider), "SigV4 provider")
            easy.set(CURLOPT_USERNAME, signing.accessKeyId)
            easy.set(CURLOPT_PASSWORD, signing.secretAccessKey)
        }

        // Timeouts.
        easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(c.connectTimeout * 1000))
        // A paced transfer (a bandwidth limit) takes as long as the pacing makes it: a total
        // timeout would fail a slow, steady transfer, so only a stall (the idle timeout) ends it.
        let paced = c.maxReceiveBytesPerSecond != nil || c.maxSendBytesPerSecond != nil
        if !paced, let total = request.timeout ?? c.requestTimeout { easy.set(CURLOPT_TIMEOUT_MS, max(1, Int(total * 1000))) }
        if c.idleTimeout > 0 {
            easy.set(CURLOPT_LOW_SPEED_LIMIT, max(1, c.lowSpeedLimit))
            easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(c.idleTimeout.rounded(.up))))
        }

        // Protocol and TLS.
        switch c.httpVersion {
        case .http1_1: easy.set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1)
        case .http2OverTLS: easy.set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        case .http2PriorKnowledge: easy.set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
        }
        // Wait for an HTTP/2 connection being set up instead of opening another (multiplexing).
        if c.httpVersion == .http2PriorKnowledge || request.url.lowercased().hasPrefix("https:") {
            easy.set(CURLOPT_PIPEWAIT, 1)
        }
        easy.set(CURLOPT_SSL_VERIFYPEER, c.verifyTLS ? 1 : 0)
        easy.set(CURLOPT_SSL_VERIFYHOST, c.verifyTLS ? 2 : 0)
        if let ca = c.caFile { try check(easy.set(CURLOPT_CAINFO, ca), "CA file \(ca)") }
        // No CURLOPT_ACCEPT_ENCODING: bodies are raw bytes, never transparently decoded.

        if c.followRedirects {
            easy.set(CURLOPT_FOLLOWLOCATION, 1)
            easy.set(CURLOPT_MAXREDIRS, c.maxRedirects)
        }
        easy.set(CURLOPT_USERAGENT, c.userAgent)
        easy.set(CURLOPT_TCP_KEEPALIVE, 1)
        if wantsLargeBuffer(request) { easy.set(CURLOPT_BUFFERSIZE, c.receiveBufferSize) }
        // A collected body with a declared Content-Length above the limit is refused before any
        // byte arrives. (Streams check it on their first 2xx bytes instead, so that an error page
        // larger than a part's length still comes back as its status.)
        if case .collect = request.destination, let limit = transfer.bodyLimit {
            easy.set(CURLOPT_MAXFILESIZE_LARGE, offset: limit)
        }
    }

    /// libcurl's upload buffer unless a request sets another.
    static let defaultUploadBuffer: Int64 = 64 << 10
    /// The largest upload buffer asked for: a 512 KiB part, the protocol's largest.
    static let largestUploadBuffer = 512 << 10

    /// Streams and large collects get the big receive buffer; small API calls keep libcurl's
    /// default (a big buffer per handle costs an allocation per transfer).
    private static func wantsLargeBuffer(_ request: HTTPRequest) -> Bool {
        if let length = request.range?.length, length <= 256 << 10 { return false }
        switch request.destination {
        case .collect(let maxSize): return (maxSize ?? 0) > 1 << 20
        case .fileDescriptor, .sink, .discard: return true
        }
    }
}
