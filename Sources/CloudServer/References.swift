import CloudCrypto
import CloudProtocol
import Foundation

/// Issues and checks file references: 32 opaque bytes = serial ‖ issued-at (ms) ‖ parent-key
/// hash ‖ MAC. The monotonic serial lets "expire everything now" reject every reference issued
/// before the call while a re-fetch in the same millisecond is already valid.
final class References: Sendable {
    private struct State {
        var nextSerial: UInt64 = 1
        var expireAllBelow: UInt64 = 0
        var expireParentBelow: [UInt64: UInt64] = [:]
        var ttlMs: Int64
    }

    private let state: Locked<State>
    private let secret: Data

    init(ttlSeconds: Int, secret: Data) {
        state = Locked(State(ttlMs: Int64(ttlSeconds) * 1000))
        self.secret = secret
    }

    var ttlSeconds: Int { state.withLock { Int($0.ttlMs / 1000) } }

    func setTTL(seconds: Int) { state.withLock { $0.ttlMs = Int64(seconds) * 1000 } }

    /// A fresh reference for `parent`.
    func issue(for parent: ParentEntity) -> Data {
        let serial = state.withLock { s -> UInt64 in
            defer { s.nextSerial += 1 }
            return s.nextSerial
        }
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        var body = Data()
        for v in [serial, now, stableHash(parent.key)] { withUnsafeBytes(of: v.bigEndian) { body.append(contentsOf: $0) } }
        return body + mac(body)
    }

    /// `nil` if the reference is valid for one of `parents`, else the error to answer.
    func check(_ reference: Data, parents: [String]) -> CloudErrorName? {
        guard reference.count == 32 else { return .fileReferenceExpired }
        let body = reference.prefix(24)
        guard mac(Data(body)) == reference.suffix(8) else { return .fileReferenceExpired }
        let bytes = [UInt8](body)
        func u64(_ at: Int) -> UInt64 { bytes[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        let serial = u64(0), issued = u64(8), parentHash = u64(16)
        guard parents.contains(where: { stableHash($0) == parentHash }) else { return .fileReferenceExpired }
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        return state.withLock { s -> CloudErrorName? in
            if s.ttlMs >= 0, issued + UInt64(s.ttlMs) < now { return .fileReferenceExpired }
            if serial < s.expireAllBelow { return .fileReferenceExpired }
            if let below = s.expireParentBelow[parentHash], serial < below { return .fileReferenceExpired }
            return nil
        }
    }

    /// Every reference issued so far becomes invalid.
    func expireAll() { state.withLock { $0.expireAllBelow = $0.nextSerial } }

    /// Every reference issued so far for `parentKey` becomes invalid.
    func expire(parentKey: String) {
        state.withLock { $0.expireParentBelow[stableHash(parentKey)] = $0.nextSerial }
    }

    private func mac(_ body: Data) -> Data {
        SHA256.hash(secret + body).prefix(8)
    }
}
