import Foundation

/// Who may read a file that holds or names a secret (a password file, S3 keys, the cluster
/// configuration): ssh's rule for private keys, with one exception for Kubernetes.
///
/// - Readable and writable by its owner only (0600 or stricter): accepted.
/// - Group-readable, nothing more for the group and nothing for others (0640, 0440): accepted
///   only when the file's group is one of this process's own groups. That is what a Kubernetes
///   Secret volume gives a pod with `fsGroup`: root owns the file, the pod's `fsGroup` owns its
///   group, and the kubelet adds the group's read bit (`defaultMode: 0400` becomes 0440). The
///   group's members are then the pod's own processes; a group this process is not in is
///   somebody else's, and the file is refused.
/// - Anything else (readable by others, writable or executable by the group): refused.
public enum CredentialFileMode {
    /// Why a file of `mode` and `group` must not be used (a phrase: "it is readable by …"), or nil.
    public static func problem(mode: mode_t, group: gid_t) -> String? {
        let bits = mode & 0o777
        let shown = "mode " + String(bits, radix: 8).leftPadded(to: 4)
        if bits & 0o007 != 0 { return "it is readable or writable by others (\(shown))" }
        if bits & 0o070 == 0 { return nil }
        if bits & 0o030 != 0 { return "it is writable or executable by its group (\(shown))" }
        if isOwnGroup(group) { return nil }
        return "it is readable by group \(group), which is not one of this process's groups (\(shown))"
    }

    /// The effective group or a supplementary group of this process.
    static func isOwnGroup(_ group: gid_t) -> Bool {
        if getegid() == group { return true }
        let count = getgroups(0, nil)
        guard count > 0 else { return false }
        var groups = [gid_t](repeating: 0, count: Int(count))
        let filled = getgroups(count, &groups)
        return filled > 0 && groups.prefix(Int(filled)).contains(group)
    }

    /// What to tell the operator about the file at `path`: the fix for either case.
    public static func fix(_ path: String) -> String {
        "`chmod 600 \(path)` (a Kubernetes Secret with fsGroup: 0440, its group one of this process's)"
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
