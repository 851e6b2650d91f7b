import COpenSSL
/// AES-256-IGE, AES-256-CTR and SHA-256 over libcrypto (arrive with the cloud issue).
public enum CloudCryptoModule {}
