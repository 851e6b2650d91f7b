#if canImport(Glibc)
    import Glibc
#endif

/// What a `ConfinedDirectory` accepts beyond the rules it never relaxes (no symbolic link is
/// followed, nothing outside the directory is reached, a FIFO or device is never opened as a
/// file, a file with several hard links is never written).
public struct ConfinementPolicy: Sendable, Equatable {
    /// Accept files and folders owned by another user or writable by group or others (the
    /// operator's explicit choice, as `JOBRUN_ALLOW_INSECURE_ROOT=1` says).
    public var allowInsecure: Bool

    public init(allowInsecure: Bool = false) { self.allowInsecure = allowInsecure }

    /// Refuses an object owned by another user, or writable by group or others.
    func check(_ st: stat, path: String) throws(ConfinedFileError) {
        if allowInsecure { return }
        if st.st_uid != geteuid() {
            throw .insecure(path: path, reason: "it is owned by uid \(st.st_uid), not by uid \(geteuid()) who runs jobrun")
        }
        let writable = st.st_mode & 0o022
        if writable != 0 {
            let who = writable == 0o022 ? "its group and others" : (writable & 0o020 != 0 ? "its group" : "others")
            throw .insecure(path: path, reason: "it is writable by \(who) (mode \(String(st.st_mode & 0o7777, radix: 8)))")
        }
    }
}
