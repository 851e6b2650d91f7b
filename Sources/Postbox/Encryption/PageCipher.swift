import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// SQLCipher 4's page format with a raw key (`PRAGMA key = "x'<64 hex>'"`, defaults untouched):
/// - pages of 4096 bytes whose last 80 are reserved: a 16-byte random IV, then the 64-byte
///   HMAC-SHA512 of the page's ciphertext, its IV and its page number (4 bytes, little endian);
/// - AES-256-CBC without padding over the page's first 4016 bytes, under the raw key;
/// - page 1 starts with the file's 16-byte random salt, in clear where SQLite keeps
///   "SQLite format 3\0", and is encrypted from byte 16 on;
/// - the HMAC key is PBKDF2-HMAC-SHA512 of the key, with the salt (each byte XOR 0x3a) as salt,
///   2 iterations, 32 bytes.
///
/// One instance serves one connection's files, one page at a time: its OpenSSL contexts are
/// made once and reused, and no page allocates.
final class PageCipher {
    static let pageSize = 4096
    static let reserveSize = 80
    static let ivSize = 16
    static let hmacSize = 64
    static let saltSize = 16
    /// Bytes of a page that carry data: the rest is the reserve.
    static let usableSize = pageSize - reserveSize
    static let hmacSaltMask: UInt8 = 0x3a
    static let hmacKeyIterations: Int32 = 2

    private let encryptor: OpaquePointer
    private let decryptor: OpaquePointer
    private let hmac: OpaquePointer
    private let key: StoreKey
    /// The salt the HMAC key was derived from; nil until a page 1 was read or written.
    private(set) var salt: [UInt8]?
    private var hmacReady = false
    private let computed = UnsafeMutablePointer<UInt8>.allocate(capacity: hmacSize)
    /// IVs drawn from libcrypto's generator `ivPoolSize / ivSize` at a time: a call for each
    /// 16-byte IV cost about a tenth of the page's encryption and HMAC, a call for 256 of them
    /// next to nothing. The pool is drawn again after a fork, so two processes never share IVs.
    private let ivPool = UnsafeMutablePointer<UInt8>.allocate(capacity: ivPoolSize)
    private var ivPoolUsed = ivPoolSize
    private var ivPoolProcess: pid_t = 0
    static let ivPoolSize = 4096

    init(key: StoreKey) {
        self.key = key
        encryptor = EVP_CIPHER_CTX_new()!
        decryptor = EVP_CIPHER_CTX_new()!
        hmac = HMAC_CTX_new()!
        key.withBytes { raw in
            let k = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            EVP_CipherInit_ex(encryptor, EVP_aes_256_cbc(), nil, k, nil, 1)
            EVP_CipherInit_ex(decryptor, EVP_aes_256_cbc(), nil, k, nil, 0)
        }
        EVP_CIPHER_CTX_set_padding(encryptor, 0)
        EVP_CIPHER_CTX_set_padding(decryptor, 0)
    }

    deinit {
        EVP_CIPHER_CTX_free(encryptor)
        EVP_CIPHER_CTX_free(decryptor)
        HMAC_CTX_free(hmac)
        computed.initialize(repeating: 0, count: Self.hmacSize)
        computed.deallocate()
        ivPool.initialize(repeating: 0, count: Self.ivPoolSize)
        ivPool.deallocate()
    }

    /// Writes a fresh random IV at `out`; false only when the random generator fails.
    private func nextIV(into out: UnsafeMutablePointer<UInt8>) -> Bool {
        let process = getpid()
        if ivPoolUsed == Self.ivPoolSize || process != ivPoolProcess {
            guard RAND_bytes(ivPool, Int32(Self.ivPoolSize)) == 1 else { return false }
            ivPoolUsed = 0
            ivPoolProcess = process
        }
        out.update(from: ivPool + ivPoolUsed, count: Self.ivSize)
        (ivPool + ivPoolUsed).initialize(repeating: 0, count: Self.ivSize)
        ivPoolUsed += Self.ivSize
        return true
    }

    /// Takes `salt` as the file's salt, deriving the HMAC key when it changed.
    func use(salt new: UnsafeRawPointer) {
        if hmacReady, let salt, salt.withUnsafeBytes({ memcmp($0.baseAddress!, new, Self.saltSize) }) == 0 { return }
        let bytes = [UInt8](UnsafeRawBufferPointer(start: new, count: Self.saltSize))
        var masked = bytes.map { $0 ^ Self.hmacSaltMask }
        var hmacKey = [UInt8](repeating: 0, count: StoreKey.byteCount)
        key.withBytes { raw in
            _ = PKCS5_PBKDF2_HMAC(
                raw.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(raw.count), &masked, Int32(masked.count), Self.hmacKeyIterations,
                EVP_sha512(), Int32(hmacKey.count), &hmacKey)
        }
        HMAC_Init_ex(hmac, hmacKey, Int32(hmacKey.count), EVP_sha512(), nil)
        for i in hmacKey.indices { hmacKey[i] = 0 }
        salt = bytes
        hmacReady = true
    }

    /// A new random salt, for a file whose first page is written for the first time.
    func useRandomSalt() {
        var fresh = [UInt8](repeating: 0, count: Self.saltSize)
        precondition(RAND_bytes(&fresh, Int32(fresh.count)) == 1, "the system's random generator failed")
        use(salt: fresh)
    }

    var hasSalt: Bool { hmacReady }

    /// Encrypts page `page` from `plain` (SQLite's 4096 bytes) into `out` (the bytes on disk).
    /// The salt must be known (`use(salt:)`). False only when OpenSSL fails.
    func encrypt(page: UInt32, plain: UnsafeRawPointer, into out: UnsafeMutableRawPointer) -> Bool {
        let offset = page == 1 ? Self.saltSize : 0
        if page == 1, let salt { salt.withUnsafeBytes { out.copyMemory(from: $0.baseAddress!, byteCount: Self.saltSize) } }
        let size = Self.usableSize - offset
        let reserve = out + Self.usableSize
        // The reserve is the IV and then the HMAC, which `mac` writes: only the IV is drawn.
        guard nextIV(into: reserve.assumingMemoryBound(to: UInt8.self)) else { return false }
        let iv = UnsafePointer(reserve.assumingMemoryBound(to: UInt8.self))
        var written: Int32 = 0
        guard EVP_CipherInit_ex(encryptor, nil, nil, nil, iv, 1) == 1,
            EVP_CipherUpdate(
                encryptor, (out + offset).assumingMemoryBound(to: UInt8.self), &written, (plain + offset).assumingMemoryBound(to: UInt8.self), Int32(size))
                == 1,
            written == Int32(size)
        else { return false }
        return mac(
            page: page, over: UnsafeRawPointer(out + offset), count: size + Self.ivSize, into: (reserve + Self.ivSize).assumingMemoryBound(to: UInt8.self))
    }

    /// Checks and decrypts page `page` from `disk` into `out` (SQLite's view, with
    /// "SQLite format 3\0" in place of page 1's salt). False when the HMAC does not match (or
    /// OpenSSL fails): `out` is then zeroed, never a page's data.
    func decrypt(page: UInt32, disk: UnsafeRawPointer, into out: UnsafeMutableRawPointer) -> Bool {
        let offset = page == 1 ? Self.saltSize : 0
        if page == 1 { use(salt: disk) }
        let size = Self.usableSize - offset
        let reserve = disk + Self.usableSize
        guard hmacReady, mac(page: page, over: disk + offset, count: size + Self.ivSize, into: computed),
            CRYPTO_memcmp(computed, reserve + Self.ivSize, Self.hmacSize) == 0
        else {
            out.initializeMemory(as: UInt8.self, repeating: 0, count: Self.pageSize)
            return false
        }
        var written: Int32 = 0
        guard EVP_CipherInit_ex(decryptor, nil, nil, nil, reserve.assumingMemoryBound(to: UInt8.self), 0) == 1,
            EVP_CipherUpdate(
                decryptor, (out + offset).assumingMemoryBound(to: UInt8.self), &written, (disk + offset).assumingMemoryBound(to: UInt8.self), Int32(size)) == 1,
            written == Int32(size)
        else {
            out.initializeMemory(as: UInt8.self, repeating: 0, count: Self.pageSize)
            return false
        }
        (out + Self.usableSize).copyMemory(from: reserve, byteCount: Self.reserveSize)
        if page == 1 { SqliteValueBox.plainHeader.withUnsafeBytes { out.copyMemory(from: $0.baseAddress!, byteCount: Self.saltSize) } }
        return true
    }

    /// HMAC-SHA512 of `count` bytes at `data`, then the page number (little endian).
    private func mac(page: UInt32, over data: UnsafeRawPointer, count: Int, into out: UnsafeMutablePointer<UInt8>) -> Bool {
        var number = page.littleEndian
        var length: UInt32 = 0
        return HMAC_Init_ex(hmac, nil, 0, nil, nil) == 1
            && HMAC_Update(hmac, data.assumingMemoryBound(to: UInt8.self), count) == 1
            && withUnsafeBytes(of: &number, { HMAC_Update(hmac, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), 4) }) == 1
            && HMAC_Final(hmac, out, &length) == 1 && length == UInt32(Self.hmacSize)
    }
}
