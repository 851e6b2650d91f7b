import ConfinedFiles
import Foundation
import Postbox

/// A key file: the 32-byte key as 64 hexadecimal digits (a final newline allowed), or as 32 raw
/// bytes (what `systemd-creds encrypt` of a raw key or a Kubernetes Secret of one holds).
///
/// Like an SSH private key, the file must belong to the user running jobrun (or to root, for a
/// file the service manager or the kubelet mounted) and must not be readable by others; a group
/// may read it only when the file is root's and the group is jobrun's own (a Kubernetes Secret
/// mounted with `fsGroup`). Nothing read from it ever reaches a message: errors name the file
/// and what is wrong with it.
public enum KeyFile {
    /// Largest file read (a hex key with surrounding white space fits many times over).
    static let maxSize = 4096

    /// Reads the key `source` names. Every problem is a `JobError.config` (exit 78).
    public static func read(_ source: RootKeySource, root: DataRoot) throws(JobError) -> StoreKey {
        let fd = try open(source, root: root)
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .config("cannot inspect the \(source): \(StorageFailure.describe(errno: errno))") }
        try checkAccess(st, source: source)
        let bytes: [UInt8]
        switch SmallFile.read(descriptor: fd, limit: maxSize, expectedSize: Int(st.st_size)) {
        case .success(let read): bytes = read
        case .failure(let problem): throw .config("cannot read the \(source): \(problem.message)")
        }
        return try decode(bytes, source: source)
    }

    /// The hexadecimal text a new key file holds.
    public static func encode(_ key: StoreKey) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(65)
        key.withBytes { raw in
            for byte in raw {
                text.append(digits[Int(byte >> 4)])
                text.append(digits[Int(byte & 0xf)])
            }
        }
        text.append(UInt8(ascii: "\n"))
        return text
    }

    /// The key in `bytes`: 32 raw bytes, or 64 hex digits with white space around them.
    static func decode(_ bytes: [UInt8], source: RootKeySource) throws(JobError) -> StoreKey {
        var raw = bytes
        defer { for i in raw.indices { raw[i] = 0 } }
        if raw.count != 32 {
            let trimmed = Array(Array(raw.drop(while: isSpace).reversed()).drop(while: isSpace).reversed())
            guard trimmed.count == 64 else {
                throw .config("the \(source) does not hold a key: it must be 64 hexadecimal digits or 32 bytes (it is \(bytes.count) bytes)")
            }
            var decoded = [UInt8](repeating: 0, count: 32)
            var index = 0
            for pair in stride(from: 0, to: 64, by: 2) {
                guard let high = hexValue(trimmed[pair]), let low = hexValue(trimmed[pair + 1]) else {
                    throw .config("the \(source) does not hold a key: 64 characters that are not all hexadecimal digits")
                }
                decoded[index] = high << 4 | low
                index += 1
            }
            raw = decoded
        }
        do { return try StoreKey(rawBytes: raw) } catch { throw .config("the \(source) does not hold a usable key") }
    }

    /// Opens the file: below the root through its confinement rules (no link followed), elsewhere
    /// as the operator named it (a Kubernetes Secret volume reaches its files through links).
    private static func open(_ source: RootKeySource, root: DataRoot) throws(JobError) -> Int32 {
        if source.isUnderRoot, let relative = root.components(of: URL(fileURLWithPath: source.path)) {
            do {
                let directory = try ConfinedDirectory.open(path: root.path, policy: ConfinementPolicy(allowInsecure: DataRoot.allowsInsecure))
                return try directory.openFile(relative.joined(separator: "/"), .read)
            } catch {
                if case .system(_, _, let code) = error, code == ENOENT { throw missing(source) }
                throw .config("cannot use the \(source): \(error)")
            }
        }
        let fd = Glibc.open(source.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw missing(source) }
            throw .config("cannot open the \(source): \(StorageFailure.describe(errno: code))")
        }
        return fd
    }

    private static func missing(_ source: RootKeySource) -> JobError {
        .config(
            "the \(source) does not exist; the root's stores cannot be opened without their key (restore the key file, or create a key for a new root with `jobrun init --encrypt`)"
        )
    }

    /// Refuses a key file that is not a regular file, belongs to someone else, or that others may read.
    static func checkAccess(_ st: stat, source: RootKeySource) throws(JobError) {
        guard st.st_mode & S_IFMT == S_IFREG else { throw .config("the \(source) is not a regular file") }
        let mode = st.st_mode & 0o7777
        let owner = st.st_uid
        guard owner == geteuid() || owner == 0 else {
            throw .config("the \(source) is owned by \(DataRoot.userName(owner)), not by \(DataRoot.userName(geteuid())) who runs jobrun")
        }
        if mode & 0o077 == 0 { return }
        let groupReadOnly = mode & 0o077 == 0o040
        if groupReadOnly, owner == 0, st.st_gid == getegid() { return }
        throw .config(
            "the \(source) is readable or writable by \(mode & 0o007 != 0 ? "others" : "its group") (mode \(DataRoot.octal(mode))); a key must be private: `chmod 600 \(source.path)`"
        )
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0a || byte == 0x0d || byte == 0x09 }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
