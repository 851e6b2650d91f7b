import CloudProtocol

/// Request counts per method, per parent entity, per file and per error name, so tests can
/// prove deduplication and resumption (`GET /admin/counters`).
final class Counters: Sendable {
    private struct State {
        var methods: [String: Int] = [:]
        var parents: [String: Int] = [:]
        var fileParts: [Int64: Int] = [:]
        var fileBytes: [Int64: Int64] = [:]
        var errors: [String: Int] = [:]
        var partOffsets: [Int64: [Int64: Int]] = [:]
    }

    private let state = Locked(State())

    func method(_ name: String) { state.withLock { $0.methods[name, default: 0] += 1 } }
    func parent(_ key: String) { state.withLock { $0.parents[key, default: 0] += 1 } }
    func error(_ name: String) { state.withLock { $0.errors[name, default: 0] += 1 } }

    func filePart(_ id: Int64, bytes: Int64, offset: Int64? = nil) {
        state.withLock {
            $0.fileParts[id, default: 0] += 1
            $0.fileBytes[id, default: 0] += bytes
            if let offset { $0.partOffsets[id, default: [:]][offset, default: 0] += 1 }
        }
    }

    /// How often each part offset of one file was served (getFile / getCdnFile).
    func partOffsets(_ id: Int64) -> FilePartCounters {
        state.withLock { s in
            FilePartCounters(
                fileId: id, parts: s.fileParts[id] ?? 0, bytes: s.fileBytes[id] ?? 0,
                offsets: Dictionary(uniqueKeysWithValues: (s.partOffsets[id] ?? [:]).map { (String($0.key), $0.value) }))
        }
    }

    func reset() { state.withLock { $0 = State() } }

    func snapshot() -> CountersResponse {
        state.withLock { s in
            CountersResponse(
                methods: s.methods, parents: s.parents,
                fileParts: Dictionary(uniqueKeysWithValues: s.fileParts.map { (String($0.key), $0.value) }),
                fileBytes: Dictionary(uniqueKeysWithValues: s.fileBytes.map { (String($0.key), $0.value) }),
                errors: s.errors)
        }
    }
}
