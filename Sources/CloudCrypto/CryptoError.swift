/// A libcrypto call failed, or a key/IV/data length is wrong.
public enum CryptoError: Error, Equatable, Sendable {
    case invalidKeyLength(Int)
    case invalidIVLength(Int)
    /// Data for AES-IGE must be a multiple of 16 bytes.
    case invalidDataLength(Int)
    /// CTR offsets must be multiples of 16.
    case unalignedOffset(Int64)
    case libcrypto(String)
}
