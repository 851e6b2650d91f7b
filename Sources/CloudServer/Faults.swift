import CloudProtocol

/// The live fault knobs and the per-request dice rolls.
final class Faults: Sendable {
    /// Fully resolved knobs (no optionals).
    struct Knobs: Sendable {
        var latencyMs = 0
        var bandwidth: Int64 = 0
        var errorRate = 0.0
        var floodWaitRate = 0.0
        var floodWaitSeconds = 1
        var corruptRate = 0.0
        var dropRate = 0.0
        var failRevalidation = false
        var malformed: MalformedAnswer = .none
        var malformedRate = 0.0
    }

    /// What to do to one request.
    enum Injected: Sendable {
        case none
        case error(CloudErrorName)
    }

    private let knobs = Locked(Knobs())

    init(_ initial: FaultConfig) { update(initial) }

    var current: Knobs { knobs.withLock { $0 } }

    /// Applies the fields present in `c`.
    func update(_ c: FaultConfig) {
        knobs.withLock { k in
            if let v = c.latencyMs { k.latencyMs = max(0, v) }
            if let v = c.bandwidthBytesPerSecond { k.bandwidth = max(0, v) }
            if let v = c.errorRate { k.errorRate = v }
            if let v = c.floodWaitRate { k.floodWaitRate = v }
            if let v = c.floodWaitSeconds { k.floodWaitSeconds = max(0, v) }
            if let v = c.corruptRate { k.corruptRate = v }
            if let v = c.dropRate { k.dropRate = v }
            if let v = c.failRevalidation { k.failRevalidation = v }
            if let v = c.malformed { k.malformed = v }
            if let v = c.malformedRate { k.malformedRate = v }
        }
    }

    var config: FaultConfig {
        let k = current
        return FaultConfig(
            latencyMs: k.latencyMs, bandwidthBytesPerSecond: k.bandwidth, errorRate: k.errorRate,
            floodWaitRate: k.floodWaitRate, floodWaitSeconds: k.floodWaitSeconds, corruptRate: k.corruptRate,
            dropRate: k.dropRate, failRevalidation: k.failRevalidation, malformed: k.malformed,
            malformedRate: k.malformedRate)
    }

    /// Error injection for an API or part call.
    func rollError(isRevalidation: Bool) -> Injected {
        let k = current
        if isRevalidation && k.failRevalidation { return .error(.internalError) }
        if k.errorRate > 0, Double.random(in: 0..<1) < k.errorRate { return .error(.internalError) }
        if k.floodWaitRate > 0, Double.random(in: 0..<1) < k.floodWaitRate { return .error(.floodWait(k.floodWaitSeconds)) }
        return .none
    }

    /// The malformed answer to give this call, if any.
    func rollMalformed() -> MalformedAnswer {
        let k = current
        guard k.malformed != .none, k.malformedRate > 0, Double.random(in: 0..<1) < k.malformedRate else { return .none }
        return k.malformed
    }

    func rollCorrupt() -> Bool {
        let r = current.corruptRate
        return r > 0 && Double.random(in: 0..<1) < r
    }

    func rollDrop() -> Bool {
        let r = current.dropRate
        return r > 0 && Double.random(in: 0..<1) < r
    }
}
