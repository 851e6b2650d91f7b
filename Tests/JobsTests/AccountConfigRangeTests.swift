import CloudCore
import Jobs
import XCTest

/// `config.yaml`'s schema and `CloudAccountConfig.problems` accept the same values: each range
/// is declared once in CloudCore, and a value at a bound's edge is accepted by both while one
/// just outside is refused by both.
final class AccountConfigRangeTests: XCTestCase {
    /// One bounded key: where it is in `config.yaml`, its schema, CloudCore's range, and how a
    /// value reaches a `CloudAccountConfig` (other keys set so that only this one is judged).
    struct Bounded {
        var key: String
        var parameter: any JobParameter
        var range: ClosedRange<Double>
        /// The step just outside a bound (1 for whole numbers, a millisecond for seconds).
        var step: Double
        var yaml: (String) -> String
        var apply: (inout CloudAccountConfig, Double) -> Void
    }

    static let url = "http://127.0.0.1:1"

    static func top(
        _ key: String, _ parameter: any JobParameter, _ range: ClosedRange<Double>, step: Double,
        _ apply: @escaping (inout CloudAccountConfig, Double) -> Void
    ) -> Bounded {
        Bounded(key: key, parameter: parameter, range: range, step: step, yaml: { "datacenters: {1: \(url)}\n\(key): \($0)" }, apply: apply)
    }

    static func retry(
        _ key: String, _ parameter: any JobParameter, _ range: ClosedRange<Double>, step: Double, also: String = "",
        _ apply: @escaping (inout CloudRetryPolicy, Double) -> Void
    ) -> Bounded {
        Bounded(
            key: "retry.\(key)", parameter: parameter, range: range, step: step,
            yaml: { "datacenters: {1: \(url)}\nretry:\n  \(key): \($0)\n" + (also.isEmpty ? "" : "  \(also)\n") },
            apply: { apply(&$0.retry, $1) })
    }

    static var cases: [Bounded] {
        typealias A = AccountConfigSection
        typealias R = AccountRetrySection
        typealias C = CloudAccountConfig
        typealias P = CloudRetryPolicy
        return [
            Bounded(
                key: "mainDc", parameter: A.mainDc, range: .init(C.datacenterIdRange), step: 1,
                yaml: { "datacenters: {\($0): \(url)}\nmainDc: \($0)" },
                apply: { c, v in c = CloudAccountConfig(datacenters: [Int(v): url], mainDc: Int(v)) }),
            top("requestTimeout", A.requestTimeout, C.requestTimeoutRange, step: 0.001) { $0.requestTimeout = $1 },
            top("connectTimeout", A.connectTimeout, C.connectTimeoutRange, step: 0.001) { $0.connectTimeout = $1 },
            top("maxAnswerSize", A.maxAnswerSize, .init(C.maxAnswerSizeRange), step: 1) { $0.maxAnswerSize = Int($1) },
            top("referenceTTL", A.referenceTTL, C.referenceTTLRange, step: 0.001) { $0.referenceTTL = $1 },
            retry("maxAttempts", R.maxAttempts, .init(P.maxAttemptsRange), step: 1) { $0.maxAttempts = Int($1) },
            retry("baseDelay", R.baseDelay, P.baseDelayRange, step: 0.001, also: "maxDelay: 3600") {
                $0.baseDelay = $1
                $0.maxDelay = 3600
            },
            retry("maxDelay", R.maxDelay, P.maxDelayRange, step: 0.001, also: "baseDelay: 0") {
                $0.maxDelay = $1
                $0.baseDelay = 0
            },
            retry("jitter", R.jitter, P.jitterRange, step: 0.001) { $0.jitter = $1 },
            retry("maxFloodWait", R.maxFloodWait, P.maxFloodWaitRange, step: 0.001) { $0.maxFloodWait = $1 },
            retry("maxFloodWaits", R.maxFloodWaits, .init(P.maxFloodWaitsRange), step: 1) { $0.maxFloodWaits = Int($1) },
            retry("maxMigrations", R.maxMigrations, .init(P.maxMigrationsRange), step: 1) { $0.maxMigrations = Int($1) },
        ]
    }

    func testEverySchemaRangeIsCloudCoresRange() {
        for bounded in Self.cases {
            XCTAssertEqual(bounded.parameter.spec.range, bounded.range, bounded.key)
        }
        XCTAssertEqual(ObjectStorageSection.partSize.spec.range, .init(S3FileUpload.partSizeRange))
    }

    func testEdgesAcceptedByBothAndJustOutsideRefusedByBoth() {
        for bounded in Self.cases {
            let edges = [
                (bounded.range.lowerBound, true), (bounded.range.upperBound, true),
                (bounded.range.lowerBound - bounded.step, false), (bounded.range.upperBound + bounded.step, false),
            ]
            for (value, valid) in edges {
                let written = bounded.step == 1 ? String(Int(value)) : "\(value)"
                let what = "\(bounded.key): \(written)"
                var config = CloudAccountConfig(datacenters: [1: Self.url])
                bounded.apply(&config, value)
                XCTAssertEqual(config.problems.isEmpty, valid, "CloudAccountConfig.problems, \(what): \(config.problems)")
                let parsed = Result { () throws(JobError) in
                    try AccountCloudConfig.parse(bounded.yaml(written), path: "/r/account-0/config.yaml", accountDirectory: "/nonexistent")
                }
                switch parsed {
                case .success: XCTAssertTrue(valid, "config.yaml accepted \(what)")
                case .failure(let error): XCTAssertFalse(valid, "config.yaml refused \(what): \(error)")
                }
            }
        }
    }

    func testProblemsShowTheDeclaredBounds() {
        var config = CloudAccountConfig(datacenters: [1: Self.url], requestTimeout: 0, maxAnswerSize: 10)
        config.retry.jitter = 2
        XCTAssertEqual(
            config.problems,
            ["requestTimeout must be 0.001…3600 seconds", "maxAnswerSize must be 1024…1073741824 bytes", "retry.jitter must be 0…1"])
    }
}
