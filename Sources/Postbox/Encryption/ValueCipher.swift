import COpenSSL
import Foundation

/// Client-side encryption of the values a store keeps on a server it does not trust with their
/// content (PostgreSQL): AES-256-GCM under a key derived from the root's `StoreKey` with
/// HKDF-SHA256 (info "jobrun postgres values v1"), a fresh random 12-byte nonce for every value
/// written, and the value's table and key as associated data, so a value moved to another row
/// fails to open instead of reading as that row's.
///
/// A sealed value is `01 ‖ nonce (12) ‖ ciphertext ‖ tag (16)`: 29 bytes more than the value.
/// Keys are not encrypted (the server orders ranges by them).
public struct ValueCipher: Sendable {
    /// Bytes a sealed value adds to its plaintext.
    public static let overhead = 1 + nonceSize + tagSize
    static let version: UInt8 = 1
    static let nonceSize = 12
    static let tagSize = 16
    static let info = Array("jobrun postgres values v1".utf8)

    /// The key's two AES-256-GCM contexts, keyed once.
    private let contexts: Contexts

    /// AES-256-GCM, fetched from libcrypto's provider once: naming it `EVP_aes_256_gcm()` made
    /// libcrypto look the implementation up again for every value.
    nonisolated(unsafe) private static let gcm: OpaquePointer? = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil)

    /// A sealing and an opening context keyed once: each value only sets its nonce, so no value
    /// allocates a context or expands the key again (which cost about as much as opening a
    /// short value). One value at a time uses them.
    private final class Contexts: @unchecked Sendable {
        let lock = NSLock()
        let sealer: OpaquePointer
        let opener: OpaquePointer

        init?(key: [UInt8]) {
            guard let sealer = EVP_CIPHER_CTX_new() else { return nil }
            guard let opener = EVP_CIPHER_CTX_new() else {
                EVP_CIPHER_CTX_free(sealer)
                return nil
            }
            self.sealer = sealer
            self.opener = opener
            let cipher = ValueCipher.gcm ?? EVP_aes_256_gcm()
            let keyed = key.withUnsafeBufferPointer { k in
                EVP_CipherInit_ex(sealer, cipher, nil, k.baseAddress, nil, 1) == 1 && EVP_CipherInit_ex(opener, cipher, nil, k.baseAddress, nil, 0) == 1
            }
            if !keyed { return nil }
        }

        deinit {
            EVP_CIPHER_CTX_free(sealer)
            EVP_CIPHER_CTX_free(opener)
        }
    }

    /// The cipher of the store key `storeKey`.
    public init(storeKey: StoreKey) throws {
        var derived = [UInt8](repeating: 0, count: 32)
        defer { for i in derived.indices { derived[i] = 0 } }
        let ok = storeKey.withBytes { secret -> Bool in
            guard let ctx = EVP_PKEY_CTX_new_id(NID_hkdf, nil) else { return false }
            defer { EVP_PKEY_CTX_free(ctx) }
            var length = derived.count
            return EVP_PKEY_derive_init(ctx) == 1 && EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) == 1
                && EVP_PKEY_CTX_set1_hkdf_key(ctx, secret.bindMemory(to: UInt8.self).baseAddress, Int32(secret.count)) == 1
                && Self.info.withUnsafeBufferPointer { EVP_PKEY_CTX_add1_hkdf_info(ctx, $0.baseAddress, Int32($0.count)) } == 1
                && EVP_PKEY_derive(ctx, &derived, &length) == 1 && length == 32
        }
        guard ok else { throw PostboxError.invalidKey(reason: "the value key could not be derived (libcrypto HKDF failed)") }
        guard let contexts = Contexts(key: derived) else { throw Self.failure("EVP_CipherInit_ex") }
        self.contexts = contexts
    }

    /// `value` sealed for the row `key` of table `table`.
    public func seal(_ value: Data, table: Int32, key rowKey: [UInt8]) throws -> Data {
        var out = Data(count: value.count + Self.overhead)
        try out.withUnsafeMutableBytes { raw in
            let p = raw.bindMemory(to: UInt8.self).baseAddress!
            p[0] = Self.version
            guard RAND_bytes(p + 1, Int32(Self.nonceSize)) == 1 else { throw Self.failure("RAND_bytes") }
            try value.withUnsafeBytes { plain in
                _ = try run(
                    encrypt: true, nonce: p + 1, table: table, rowKey: rowKey, input: plain, output: p + 1 + Self.nonceSize,
                    tag: p + 1 + Self.nonceSize + value.count)
            }
        }
        return out
    }

    /// The value sealed in `sealed` for the row `key` of table `table`; `store` names the store
    /// in the error thrown when it does not open (the wrong key, a damaged or moved value).
    public func open(_ sealed: UnsafeRawBufferPointer, table: Int32, key rowKey: [UInt8], store: String) throws -> Data {
        guard sealed.count >= Self.overhead, sealed[0] == Self.version else {
            throw PostboxError.decoding("\(store): a value in table \(table) is not sealed with the store's key (written without encryption?)")
        }
        let length = sealed.count - Self.overhead
        var out = Data(count: length)
        let base = sealed.bindMemory(to: UInt8.self).baseAddress!
        let ok = try out.withUnsafeMutableBytes { raw -> Bool in
            let output = raw.bindMemory(to: UInt8.self).baseAddress ?? UnsafeMutablePointer<UInt8>(mutating: base)
            return try run(
                encrypt: false, nonce: base + 1, table: table, rowKey: rowKey,
                input: UnsafeRawBufferPointer(start: base + 1 + Self.nonceSize, count: length), output: output,
                tag: UnsafeMutablePointer(mutating: base + 1 + Self.nonceSize + length))
        }
        guard ok else { throw PostboxError.decoding("\(store): a value in table \(table) fails authentication (another key, or altered)") }
        return out
    }

    /// Whether `sealed` opens with this key (for a store's key check).
    public func opens(_ sealed: Data, table: Int32, key rowKey: [UInt8]) -> Bool {
        (try? sealed.withUnsafeBytes { try open($0, table: table, key: rowKey, store: "") }) != nil
    }

    /// One GCM pass with the keyed context, the table id (big-endian) and the row's key as
    /// associated data. Sealing writes the tag at `tag`; opening checks the one there. True when
    /// the final step succeeded (for opening: the tag matched).
    private func run(
        encrypt: Bool, nonce: UnsafePointer<UInt8>, table: Int32, rowKey: [UInt8], input: UnsafeRawBufferPointer,
        output: UnsafeMutablePointer<UInt8>, tag: UnsafeMutablePointer<UInt8>
    ) throws -> Bool {
        contexts.lock.lock()
        defer { contexts.lock.unlock() }
        let ctx = encrypt ? contexts.sealer : contexts.opener
        var written: Int32 = 0
        guard EVP_CipherInit_ex(ctx, nil, nil, nil, nonce, encrypt ? 1 : 0) == 1 else { throw Self.failure("EVP_CipherInit_ex") }
        var id = UInt32(bitPattern: table).bigEndian
        let aadOK =
            withUnsafeBytes(of: &id) { EVP_CipherUpdate(ctx, nil, &written, $0.bindMemory(to: UInt8.self).baseAddress, 4) == 1 }
            && rowKey.withUnsafeBufferPointer { EVP_CipherUpdate(ctx, nil, &written, $0.baseAddress, Int32($0.count)) == 1 }
        guard aadOK else { throw Self.failure("EVP_CipherUpdate (associated data)") }
        written = 0
        if input.count > 0 {
            guard EVP_CipherUpdate(ctx, output, &written, input.bindMemory(to: UInt8.self).baseAddress, Int32(input.count)) == 1 else {
                throw Self.failure("EVP_CipherUpdate")
            }
        }
        if !encrypt, EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, Int32(Self.tagSize), tag) != 1 { throw Self.failure("EVP_CIPHER_CTX_ctrl (tag)") }
        var tail: Int32 = 0
        let finished = EVP_CipherFinal_ex(ctx, output + Int(written), &tail) == 1
        if encrypt {
            guard finished else { throw Self.failure("EVP_CipherFinal_ex") }
            if EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, Int32(Self.tagSize), tag) != 1 { throw Self.failure("EVP_CIPHER_CTX_ctrl (tag)") }
        }
        return finished
    }

    private static func failure(_ call: String) -> PostboxError { .invalidKey(reason: "libcrypto \(call) failed") }
}
