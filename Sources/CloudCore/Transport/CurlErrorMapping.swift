import CCurl

/// Maps a failed libcurl transfer to a ``TransportError``.
enum CurlErrorMapping {
    /// `connected`: the TCP connection (and TLS handshake, for https) completed before the
    /// failure — what tells a connect timeout from a total one, since libcurl reports both as
    /// CURLE_OPERATION_TIMEDOUT and words the message differently from version to version.
    static func error(
        for code: CURLcode, message: String, url: String, connected: Bool, received: Int64,
        bodyLimit: Int64?, declaredLength: Int64
    ) -> TransportError {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT:
            return .connectFailed(url: url, reason: message)
        case CURLE_OPERATION_TIMEDOUT:
            let kind: TransportError.TimeoutKind
            if message.contains("too slow") {
                kind = .idle
            } else if !connected {
                kind = .connect
            } else {
                kind = .total
            }
            return .timedOut(kind, url: url, reason: message)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR,
            CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_ENGINE_NOTFOUND,
            CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_SHUTDOWN_FAILED,
            CURLE_SSL_CRL_BADFILE, CURLE_USE_SSL_FAILED:
            return .tls(url: url, reason: message)
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING,
            CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return .connectionDropped(url: url, reason: message, received: received)
        case CURLE_FILESIZE_EXCEEDED:
            return .tooLarge(limit: bodyLimit ?? -1, received: max(declaredLength, received))
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            return .invalidRequest("\(url): \(message)")
        default:
            return .other(code: Int(code.rawValue), reason: message)
        }
    }
}
