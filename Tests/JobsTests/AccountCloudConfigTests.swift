import CloudCore
import Foundation
import Jobs
import XCTest

/// `account-<id>/config.yaml` → `CloudAccountConfig`: both datacenter forms, credentials file,
/// durations, and errors that name the file and position but never the token.
final class AccountCloudConfigTests: XCTestCase {
    func parse(_ yaml: String, dir: String = "/nonexistent") throws(JobError) -> CloudAccountConfig {
        try AccountCloudConfig.parse(yaml, path: "/r/account-0/config.yaml", accountDirectory: dir)
    }

    func testFullFileAndCloudddListForm() throws {
        let dir = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try "tok-from-file\nignored\n".write(to: dir.appendingPathComponent("credentials"), atomically: true, encoding: .utf8)
        chmod(dir.appendingPathComponent("credentials").path, 0o600)
        let c = try parse(
            """
            datacenters:
              1: http://127.0.0.1:40000
              2: http://127.0.0.1:40001/
            cdn: http://127.0.0.1:40100
            mainDc: 2
            credentialsFile: credentials
            requestTimeout: 45s
            connectTimeout: 3
            maxAnswerSize: 2MiB
            retry:
              maxAttempts: 7
              baseDelay: 100ms
              maxDelay: 2s
              jitter: 0.25
              maxFloodWait: 1m
              maxFloodWaits: 2
            """, dir: dir.path)
        XCTAssertEqual(c.datacenters, [1: "http://127.0.0.1:40000", 2: "http://127.0.0.1:40001/"])
        XCTAssertEqual(c.baseURL(ofDc: 2), "http://127.0.0.1:40001")
        XCTAssertEqual(c.cdnURL, "http://127.0.0.1:40100")
        XCTAssertEqual(c.mainDc, 2)
        XCTAssertEqual(c.authToken, "tok-from-file")
        XCTAssertEqual(c.requestTimeout, 45)
        XCTAssertEqual(c.connectTimeout, 3)
        XCTAssertEqual(c.maxAnswerSize, 2 << 20)
        XCTAssertEqual(c.retry, CloudRetryPolicy(maxAttempts: 7, baseDelay: 0.1, maxDelay: 2, jitter: 0.25, maxFloodWait: 60, maxFloodWaits: 2))
        XCTAssertFalse(c.description.contains("tok-from-file"))

        let listed = try parse(
            """
            datacenters: [{id: 1, url: "http://127.0.0.1:1"}, {id: 3, url: "http://127.0.0.1:3"}]
            cdn: {id: 101, url: "http://127.0.0.1:101"}
            """)
        XCTAssertEqual(listed.datacenters.keys.sorted(), [1, 3])
        XCTAssertEqual(listed.mainDc, 1)
        XCTAssertEqual(listed.cdnURL, "http://127.0.0.1:101")
        XCTAssertNil(listed.authToken)
    }

    func testErrorsNameFileAndPositionNeverTheToken() throws {
        func message(_ yaml: String) -> String {
            do {
                _ = try parse(yaml)
                XCTFail("expected an error for \(yaml)")
                return ""
            } catch {
                XCTAssertEqual(error.exitCode, .config)
                return error.message
            }
        }
        XCTAssertTrue(message("datacenter:\n  1: http://x\n").contains("config.yaml:1:1: unknown key 'datacenter'; did you mean 'datacenters'?"))
        XCTAssertTrue(message("datacenters:\n  1: ftp://x\n").contains("datacenter 1 URL must be an http"))
        XCTAssertTrue(message("datacenters:\n  1: http://x\nmainDc: 4\n").contains("mainDc 4"))
        XCTAssertTrue(message("datacenters:\n  1: http://x\nrequestTimeout: soon\n").contains("config.yaml:3:"))
        XCTAssertTrue(
            message("datacenters:\n  1: http://x\nretry:\n  maxAtempts: 3\n").contains("unknown key 'maxAtempts' in retry; did you mean 'maxAttempts'?"))
        XCTAssertTrue(message("datacenters:\n  1: http://x\ncredentialsFile: nope\n").contains("cannot read the credentials file /nonexistent/nope"))
        XCTAssertTrue(message("[1, 2]").contains("must be a mapping"))
        let bad = message("datacenters:\n  1: http://x\nauthToken: \"a\\nsecret-tail\"\n")
        XCTAssertTrue(bad.contains("one non-empty line"), bad)
        XCTAssertFalse(bad.contains("secret-tail"), bad)
    }

    func testMissingFileNamesThePath() throws {
        let dir = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let paths = DataRoot(url: dir).account(3)
        XCTAssertThrowsError(try AccountCloudConfig.load(paths)) { error in
            let e = error as? JobError
            XCTAssertEqual(e?.exitCode, .config)
            XCTAssertTrue(e?.message.contains(dir.path + "/account-3/config.yaml") ?? false, e?.message ?? "")
        }
    }
}
