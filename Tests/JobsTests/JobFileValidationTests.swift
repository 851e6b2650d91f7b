import Foundation
import XCTest

@testable import Jobs

/// Malformed job files, each rejected with the exact `file:line:column`.
final class JobFileValidationTests: XCTestCase {
    static let head = "name: t\nkind: upload-queue\nschedule: \"*/5 * * * *\"\n"
    static let cleanupHead = "name: c\nkind: time-based-cleanup\nschedule: \"@daily\"\n"

    /// (case, YAML, expected "line:column", a fragment of the message)
    static let malformed: [(String, String, String, String)] = [
        ("unclosed flow sequence", "name: t\nkind: [upload-queue\nschedule: x\n", "3:9", "YAML syntax error"),
        ("bad indentation", "name: t\n  kind: upload-queue\n", "2:7", "YAML syntax error"),
        ("unclosed quote", "name: t\nkind: upload-queue\nschedule: \"*/5 * * *\n", "4:1", "YAML syntax error"),
        ("tab indentation", "name: t\nretry:\n\tbackoffLimit: 1\n", "3:1", "YAML syntax error"),
        ("empty file", "", "1:1", "empty"),
        ("root is a list", "- name: t\n", "1:1", "must be a mapping"),
        ("root is a scalar", "just text\n", "1:1", "must be a mapping"),
        ("unknown top-level key", head + "schedul: x\n", "4:1", "unknown key 'schedul'"),
        ("unknown key in retry", head + "retry:\n  attempts: 3\n", "5:3", "unknown key 'attempts' in retry"),
        ("unknown key in backoff", head + "retry:\n  backoff:\n    initial: 1s\n    maximum: 2m\n", "7:5", "unknown key 'maximum'"),
        ("name is a number", "name: 123\nkind: upload-queue\n", "1:7", "wrong type"),
        ("enabled is a quoted string", head + "enabled: \"yes\"\n", "4:10", "wrong type"),
        ("enabled is yes", head + "enabled: yes\n", "4:10", "true or false"),
        ("duration bad unit", head + "timeout: 5x\n", "4:11", "unknown duration unit 'x'"),
        ("negative duration", head + "timeout: -1s\n", "4:10", "negative"),
        ("bare number duration", head + "timeout: 30\n", "4:12", "missing unit"),
        ("duration units out of order", head + "timeout: 30s5m\n", "4:14", "descending order"),
        ("duration out of range", head + "timeout: 0s\n", "4:10", "out of range"),
        ("cron value out of range", "name: t\nkind: upload-queue\nschedule: \"61 * * * *\"\n", "3:12", "minute field"),
        ("cron with four fields", "name: t\nkind: upload-queue\nschedule: \"* * * *\"\n", "3:19", "expected 5 fields"),
        ("cron never fires", "name: t\nkind: upload-queue\nschedule: \"0 0 30 2 *\"\n", "3:16", "never fires"),
        ("cron step zero", "name: t\nkind: upload-queue\nschedule: \"*/0 * * * *\"\n", "3:12", "step"),
        ("cron backwards range", "name: t\nkind: upload-queue\nschedule: '0 0 * * FRI-MON'\n", "3:20", "backwards"),
        ("cron unknown macro", "name: t\nkind: upload-queue\nschedule: \"@reboot\"\n", "3:12", "@reboot"),
        ("cron plain scalar with bad month", "name: t\nkind: upload-queue\nschedule: 0 0 1 FOO *\n", "3:17", "month field"),
        ("unknown kind", "name: t\nkind: upload-queu\n", "2:7", "unknown job kind 'upload-queu'; did you mean 'upload-queue'?"),
        ("missing kind", "name: t\nschedule: \"@daily\"\n", "1:1", "missing required key 'kind'"),
        ("missing name", "kind: upload-queue\n", "1:1", "missing required key 'name'"),
        ("kind without value", "name: t\nkind:\n", "2:6", "'kind' must have a value"),
        ("missing required param", cleanupHead + "params:\n  ttl: 7d\n", "5:3", "missing required parameter 'maxSize'"),
        ("missing params block", cleanupHead, "1:1", "missing required parameter 'maxSize'"),
        ("unknown param", head + "params:\n  concurency: 2\n", "5:3", "unknown parameter 'concurency' for kind upload-queue; did you mean 'concurrency'?"),
        ("param wrong type", head + "params:\n  concurrency: two\n", "5:16", "wrong type"),
        ("param quoted number", head + "params:\n  concurrency: \"2\"\n", "5:16", "wrong type"),
        ("param out of range", head + "params:\n  partsInFlight: 100\n", "5:18", "out of range"),
        ("bad byte size", cleanupHead + "params:\n  maxSize: 10XB\n", "5:14", "unknown size unit 'XB'"),
        ("negative byte size", cleanupHead + "params:\n  maxSize: -5MB\n", "5:12", "negative"),
        (
            "bad word in list", "name: p\nkind: prefetch-chat-media\nparams:\n  peerCategories: [contacts, martians]\n", "4:30",
            "'martians' is not a valid value"
        ),
        ("list given as scalar", "name: p\nkind: prefetch-chat-media\nparams:\n  mediaTypes: photo\n", "4:15", "wrong type"),
        ("unknown key in size map", "name: p\nkind: prefetch-chat-media\nparams:\n  sizeCaps:\n    gif: 1MB\n", "5:5", "unknown key 'gif'"),
        ("bad size in map", "name: p\nkind: prefetch-chat-media\nparams:\n  sizeCaps:\n    video: 10 parsecs\n", "5:15", "unknown size unit"),
        ("params not a mapping", head + "params: [1, 2]\n", "4:9", "params must be a mapping"),
        ("duplicate key", head + "timeout: 1m\ntimeout: 2m\n", "5:1", "duplicate key 'timeout'"),
        ("duplicate param key", head + "params:\n  concurrency: 1\n  concurrency: 2\n", "6:3", "duplicate key 'concurrency'"),
        ("lowercase policy", head + "concurrencyPolicy: forbid\n", "4:20", "'forbid' is not a valid value for 'concurrencyPolicy'; did you mean 'Forbid'?"),
        ("duplicate account", head + "accounts: [0, 0]\n", "4:11", "listed twice"),
        ("account as string", head + "accounts: \"0\"\n", "4:11", "wrong type"),
        ("negative account", head + "accounts: [-1]\n", "4:12", "out of range"),
        ("unknown time zone", head + "timeZone: Mars/Olympus\n", "4:11", "unknown time zone"),
        ("backoff max below initial", head + "retry:\n  backoff:\n    initial: 5m\n    max: 1m\n", "7:10", "shorter than"),
        ("invalid job name", "name: \"bad name!\"\nkind: upload-queue\n", "1:7", "invalid job name"),
        ("yaml alias", "name: &n t\nkind: upload-queue\ndescription: *n\n", "1:7", "aliases are not supported"),
        ("yaml alias without anchor", "name: t\nkind: upload-queue\ndescription: *n\n", "3:14", "YAML aliases are not supported"),
        ("unquoted cron schedule", "name: t\nkind: upload-queue\nschedule: */5 * * * *\n", "3:12", "YAML syntax error"),
        ("multiplier too small", head + "retry:\n  backoff:\n    multiplier: 0.5\n", "6:17", "out of range"),
        ("backoffLimit wrong type", head + "retry:\n  backoffLimit: many\n", "5:17", "wrong type"),
        ("retry not a mapping", head + "retry: 3\n", "4:8", "wrong type"),
    ]

    func testMalformedJobFilesAreRejectedWithPositions() {
        XCTAssertGreaterThanOrEqual(Self.malformed.count, 25)
        for (label, yaml, position, fragment) in Self.malformed {
            do {
                let job = try JobFile.parse(yaml: yaml, file: "case.yaml")
                XCTFail("\(label): accepted as \(job.name)")
            } catch {
                let first = error.errors.first?.description ?? ""
                let matching = error.errors.first { $0.description.hasPrefix("case.yaml:\(position): ") }
                XCTAssertNotNil(matching, "\(label): expected an error at \(position), got:\n\(error)")
                XCTAssertTrue(
                    error.errors.contains { $0.description.contains(fragment) },
                    "\(label): expected '\(fragment)' in:\n\(error)")
                XCTAssertTrue(first.hasPrefix("case.yaml:"), label)
            }
        }
    }

    func testErrorsNameWhatWasExpected() throws {
        do {
            _ = try JobFile.parse(yaml: Self.head + "timeout: 5x\n", file: "jobs/x.yaml")
            XCTFail("accepted")
        } catch {
            XCTAssertEqual(
                error.description,
                "jobs/x.yaml:4:11: bad duration '5x' for 'timeout': unknown duration unit 'x' (expected \(ConfigDuration.expected))")
            XCTAssertEqual(error.exitCode.rawValue, 78)
        }
    }

    func testAllErrorsOfAFileAreCollected() {
        let yaml = """
            name: t
            kind: time-based-cleanup
            timeout: 5x
            schedule: "61 * * * *"
            colour: blue
            params:
              ttl: soon
              maxSize: 1GB
              bogus: 1

            """
        do {
            _ = try JobFile.parse(yaml: yaml, file: "multi.yaml")
            XCTFail("accepted")
        } catch {
            let positions = error.errors.map { "\($0.line):\($0.column)" }
            XCTAssertEqual(positions, ["3:11", "4:12", "5:1", "7:8", "9:3"], error.description)
        }
    }

    func testValidFileDecodesWithDefaults() throws {
        let job = try JobFile.parse(
            yaml: """
                name: p
                kind: prefetch-chat-media
                schedule: "*/15 * * * *"
                timeZone: Europe/Berlin
                params:
                  sizeCaps:
                    video: 20MB
                  budget: 1.5GiB

                """, file: "p.yaml")
        XCTAssertEqual(job.kind, PrefetchChatMediaJob.name)
        XCTAssertEqual(job.timeout, .seconds(3600))
        XCTAssertEqual(job.concurrencyPolicy, .forbid)
        XCTAssertEqual(job.accounts, [0])
        XCTAssertEqual(job.retry.maxAttempts, 3)
        XCTAssertEqual(job.timeZone?.identifier, "Europe/Berlin")
        typealias Kind = PrefetchChatMediaJob
        XCTAssertEqual(job.params[Kind.budget].bytes, Int64(1.5 * 1_073_741_824))
        let caps = job.params[Kind.sizeCaps]
        XCTAssertEqual(caps[.video]?.bytes, 20_000_000)
        XCTAssertEqual(caps[.photo]?.bytes, 1 << 20)  // default kept
        XCTAssertEqual(job.params[Kind.mediaTypes].count, 6)
        XCTAssertEqual(job.params[Kind.concurrency], 4)
        XCTAssertNil(job.params[Kind.bandwidthLimit])
        XCTAssertEqual(job.params.position(of: Kind.budget).description, "p.yaml:8:11")
        XCTAssertEqual(job.params.error(Kind.budget, "too big").description, "p.yaml:8:11: too big")
    }

    func testDurationsAndSizes() {
        let durations: [(String, Int64?)] = [
            ("30s", 30_000), ("5m", 300_000), ("1h30m", 5_400_000), ("2d", 172_800_000),
            ("1w", 604_800_000), ("250ms", 250), ("0s", 0), ("1h0m5s", 3_605_000),
            ("-1s", nil), ("5x", nil), ("30", nil), ("1.5h", nil), ("", nil), ("5m1h", nil), ("1h 30m", nil),
        ]
        for (text, expected) in durations {
            switch ConfigDuration.parse(text) {
            case .success(let duration): XCTAssertEqual(ConfigDuration.milliseconds(duration), expected, text)
            case .failure: XCTAssertNil(expected, text)
            }
        }
        let sizes: [(String, Int64?)] = [
            ("512", 512), ("512B", 512), ("10kB", 10_000), ("10KB", 10_000), ("10MB", 10_000_000),
            ("1GB", 1_000_000_000), ("64KiB", 65_536), ("1GiB", 1_073_741_824), ("1.5MiB", 1_572_864),
            ("2TiB", 2_199_023_255_552), ("10 MB", 10_000_000),
            ("-1MB", nil), ("10XB", nil), ("MB", nil), ("1.5B", nil), ("1..5MB", nil), ("1e3", nil),
        ]
        for (text, expected) in sizes {
            switch ByteSize.parse(text) {
            case .success(let bytes): XCTAssertEqual(bytes, expected, text)
            case .failure: XCTAssertNil(expected, text)
            }
        }
        XCTAssertEqual(ConfigDuration.format(.seconds(5400)), "1h30m")
        XCTAssertEqual(ByteSize.format(10 << 20), "10MiB")
    }

    func testRetryDelays() {
        let retry = RetryPolicy(backoffLimit: 5, initialBackoff: .seconds(10), maxBackoff: .seconds(60), multiplier: 2)
        XCTAssertEqual((1...5).map { Int(retry.delay(beforeRetry: $0).jobSeconds) }, [10, 20, 40, 60, 60])
    }
}
