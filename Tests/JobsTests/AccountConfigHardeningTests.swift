import CloudCore
import Foundation
import Jobs
import XCTest

/// `config.yaml` against careless and hostile input: a wrong-typed token is an error at its
/// position (never silently dropped), a credentials file others may read is refused like an ssh
/// key, and no message shows a secret or a file's contents.
final class AccountConfigHardeningTests: XCTestCase {
    let path = "/r/account-0/config.yaml"

    func message(_ yaml: String, dir: String = "/nonexistent") -> String? {
        do {
            _ = try AccountCloudConfig.parse(yaml, path: path, accountDirectory: dir)
            return nil
        } catch {
            XCTAssertEqual(error.exitCode, .config)
            return error.message
        }
    }

    func testWrongTypedAuthTokenIsAnErrorAtItsPosition() {
        let list = message("datacenters:\n  1: http://x\nauthToken:\n  - secret-one\n  - secret-two\n")
        XCTAssertNotNil(list, "a list token must not be dropped (the job would run unauthenticated)")
        XCTAssertTrue(list?.contains("\(path):4:3: 'authToken' must be a string, not a list") == true, list ?? "")
        XCTAssertFalse(list?.contains("secret-one") == true, list ?? "")

        let mapping = message("datacenters:\n  1: http://x\nauthToken: {value: secret-three}\n")
        XCTAssertTrue(mapping?.contains("\(path):3:12: 'authToken' must be a string, not a mapping") == true, mapping ?? "")
        XCTAssertFalse(mapping?.contains("secret-three") == true, mapping ?? "")

        let empty = message("datacenters:\n  1: http://x\nauthToken:\n")
        XCTAssertTrue(empty?.contains("`authToken` is empty") == true, empty ?? "")
        XCTAssertNil(message("datacenters:\n  1: http://x\nauthToken: fine-token\n"))
    }

    /// Found by `jobrun-bench fuzz`: a quote left open folds the lines after it (the token's
    /// among them) into one URL value, which the error used to print whole.
    func testABadURLIsNeverEchoedWithWhatItSwallowed() {
        let swallowed = message("datacenters:\n  1: \"\n  2: http://x\nauthToken: token-in-a-url-value\nreferenceTTL: \"\n")
        XCTAssertNotNil(swallowed)
        XCTAssertFalse(swallowed?.contains("token-in-a-url-value") == true, swallowed ?? "")
        XCTAssertTrue(swallowed?.contains("not shown") == true, swallowed ?? "")

        let userinfo = message("datacenters:\n  1: ftp://user:hunter2@host/x\n")
        XCTAssertTrue(userinfo?.contains("ftp://…@host/x") == true, userinfo ?? "")
        XCTAssertFalse(userinfo?.contains("hunter2") == true, userinfo ?? "")

        // A short bad URL is still shown: the operator needs to see what is wrong.
        XCTAssertTrue(message("datacenters:\n  1: localhost:8080\n")?.contains("'localhost:8080'") == true)
    }

    func testCredentialsFileOthersMayReadIsRefusedAndNeverEchoed() throws {
        let dir = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("credentials").path
        try "very-secret-token\nsecond line\n".write(toFile: file, atomically: false, encoding: .utf8)
        let yaml = "datacenters:\n  1: http://x\ncredentialsFile: credentials\n"
        // 0640 in a group this process is not in (nogroup, given when running as root) is
        // somebody else's group.
        var cases: [(mode_t, gid_t)] = [(0o644, getegid()), (0o604, getegid()), (0o660, getegid())]
        if geteuid() == 0 { cases.append((0o640, 65534)) }
        for (mode, group) in cases {
            chmod(file, mode)
            chown(file, getuid(), group)
            let refused = message(yaml, dir: dir.path)
            XCTAssertTrue(
                refused?.contains("\(path):3:18: the credentials file \(file): it is ") == true && refused?.contains("chmod 600 \(file)") == true,
                refused ?? "accepted with mode \(String(mode, radix: 8))")
            XCTAssertFalse(refused?.contains("very-secret-token") == true)
        }
        // A Kubernetes Secret with fsGroup: 0440 in this process's own group is accepted.
        chown(file, getuid(), getegid())
        chmod(file, 0o440)
        XCTAssertNil(message(yaml, dir: dir.path))
        chmod(file, 0o600)
        XCTAssertEqual(try AccountCloudConfig.parse(yaml, path: path, accountDirectory: dir.path).authToken, "very-secret-token")
        chmod(file, 0o400)
        XCTAssertNil(message(yaml, dir: dir.path))

        // A directory, or a credentials "file" that is a directory: the reason, not contents.
        try FileManager.default.removeItem(atPath: file)
        try FileManager.default.createDirectory(atPath: file, withIntermediateDirectories: false)
        XCTAssertTrue(message(yaml, dir: dir.path)?.contains("is not a regular file") == true)
    }

    func testConfigThatIsADirectoryOrTooLargeNamesThePathAndTheReason() throws {
        let dir = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let paths = DataRoot(url: dir).account(0)
        try FileManager.default.createDirectory(at: paths.config, withIntermediateDirectories: true)
        XCTAssertThrowsError(try AccountCloudConfig.load(paths)) { error in
            let e = error as? JobError
            XCTAssertEqual(e?.exitCode, .config)
            XCTAssertTrue(e?.message.contains("\(paths.config.path):1:1: cannot read cloud configuration: it is a directory") == true, e?.message ?? "")
            XCTAssertFalse(e?.message.contains("error 256") == true || e?.message.contains("NSCocoaErrorDomain") == true, e?.message ?? "")
        }
        try FileManager.default.removeItem(at: paths.config)
        try Data(repeating: 0x61, count: AccountCloudConfig.maxConfigSize + 1).write(to: paths.config)
        XCTAssertThrowsError(try AccountCloudConfig.load(paths)) { error in
            XCTAssertTrue((error as? JobError)?.message.contains("at most \(AccountCloudConfig.maxConfigSize) are read") == true, "\(error)")
        }
    }

    func testEveryValueProblemCarriesAPosition() {
        let m = message("datacenters:\n  7: ftp://x\nmainDc: 9\n")
        XCTAssertTrue(m?.contains("\(path):2:3: datacenter 7 URL must be an http") == true, m ?? "")
        XCTAssertTrue(m?.contains("\(path):3:9: mainDc 9 is not among") == true, m ?? "")
        XCTAssertTrue(message("just a scalar")?.contains("\(path):1:1: the cloud configuration must be a mapping") == true)
    }
}
