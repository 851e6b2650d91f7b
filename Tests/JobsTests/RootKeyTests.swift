import Foundation
import Jobs
import Postbox
import XCTest

/// Where a data root's key comes from, which source wins, and clear refusals (exit 78) that
/// name the file and never show a byte of the key.
final class RootKeyTests: XCTestCase {
    private func root() throws -> DataRoot {
        let url = try TestPaths.makeTempDirectory()
        chmod(url.path, 0o700)
        return DataRoot(url: url)
    }

    private let hexKey = String(repeating: "0123456789abcdef", count: 4)

    private func writeKey(_ path: String, _ text: String, mode: mode_t = 0o600) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, mode)
    }

    private func bytes(_ key: StoreKey?) -> [UInt8]? { key?.withBytes { Array($0) } }

    func testNoSourceIsAPlaintextRoot() throws {
        let root = try root()
        XCTAssertNil(RootKeySource.locate(root: root, environment: [:]))
        XCTAssertNil(try RootKey.load(root: root, environment: [:]))
    }

    func testTheRootKeyFileInHexOrRawBytes() throws {
        let root = try root()
        let path = root.path + "/keys/store.key"
        try writeKey(path, hexKey + "\n")
        XCTAssertEqual(RootKeySource.locate(root: root, environment: [:]), .rootFile(path: path))
        XCTAssertEqual(bytes(try RootKey.load(root: root, environment: [:])), (0..<32).map { UInt8(($0 % 8) * 0x22 + 0x01) })
        let raw = (0..<32).map { UInt8($0 * 7) }
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(raw)))
        chmod(path, 0o600)
        XCTAssertEqual(bytes(try RootKey.load(root: root, environment: [:])), raw)
    }

    func testACredentialWinsOverTheVariableWhichWinsOverTheRootFile() throws {
        let root = try root()
        let scratch = try TestPaths.makeTempDirectory()
        try writeKey(root.path + "/keys/store.key", hexKey)
        let named = scratch.path + "/named.key"
        try writeKey(named, String(repeating: "11", count: 32))
        let credentials = scratch.path + "/credentials"
        try writeKey(credentials + "/jobrun-store-key", String(repeating: "22", count: 32), mode: 0o400)
        let all = ["CREDENTIALS_DIRECTORY": credentials, "JOBRUN_KEY_FILE": named]
        XCTAssertEqual(RootKeySource.locate(root: root, environment: all), .credential(path: credentials + "/jobrun-store-key"))
        XCTAssertEqual(bytes(try RootKey.load(root: root, environment: all)), [UInt8](repeating: 0x22, count: 32))
        XCTAssertEqual(bytes(try RootKey.load(root: root, environment: ["JOBRUN_KEY_FILE": named])), [UInt8](repeating: 0x11, count: 32))
        // A credentials directory without the credential does not count.
        let other = ["CREDENTIALS_DIRECTORY": scratch.path, "JOBRUN_KEY_FILE": named]
        XCTAssertEqual(RootKeySource.locate(root: root, environment: other), .configuredFile(path: named))
    }

    func testRefusalsAreExit78AndNeverShowTheKey() throws {
        let root = try root()
        let path = root.path + "/keys/store.key"
        func refusal(_ environment: [String: String] = [:], file: StaticString = #filePath, line: UInt = #line) -> String {
            do {
                _ = try RootKey.load(root: root, environment: environment)
                XCTFail("loaded", file: file, line: line)
                return ""
            } catch {
                XCTAssertEqual(error.exitCode, .config, file: file, line: line)
                XCTAssertFalse(error.message.contains(hexKey) || error.message.contains("0123456789"), error.message, file: file, line: line)
                return error.message
            }
        }
        try writeKey(path, hexKey, mode: 0o644)
        let readable = refusal()
        XCTAssertTrue(readable.contains(path) && readable.contains("others") && readable.contains("chmod 600"), readable)

        chmod(path, 0o600)
        try writeKey(path, "not a key at all")
        XCTAssertTrue(refusal().contains("does not hold a key"))
        try writeKey(path, String(repeating: "zz", count: 32))
        XCTAssertTrue(refusal().contains("hexadecimal"))

        let missing = root.path + "/elsewhere/none.key"
        let gone = refusal(["JOBRUN_KEY_FILE": missing])
        XCTAssertTrue(gone.contains(missing) && gone.contains("does not exist"), gone)

        // The key file may not be a link planted in the root.
        unlink(path)
        let target = try TestPaths.makeTempDirectory().path + "/target.key"
        try writeKey(target, hexKey)
        XCTAssertEqual(symlink(target, path), 0)
        XCTAssertTrue(refusal().contains("symbolic link"))
    }

    func testInitCreatesOnePrivateKeyOnceAndRefusesAPlaintextRoot() throws {
        let root = try root()
        guard case .created(let path) = try RootInitialization.run(root: root, encrypt: true, environment: [:]) else {
            return XCTFail("no key created")
        }
        XCTAssertEqual(path, root.path + "/keys/store.key")
        var st = stat()
        XCTAssertEqual(stat(path, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertEqual(text.count, 65, "64 hex digits and a newline")
        let key = try XCTUnwrap(try RootKey.load(root: root, environment: [:]))
        XCTAssertEqual("\(key)", "StoreKey(redacted)")
        XCTAssertEqual(try RootInitialization.run(root: root, encrypt: true, environment: [:]), .existing(.rootFile(path: path)))
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), text, "a second init changes nothing")
        XCTAssertTrue(RootEncryptionState.of(root, environment: [:]).encrypted)

        let plain = try self.root()
        let account = plain.account(0)
        try account.createDirectories()
        _ = try Postbox(path: account.postboxFile.path)
        XCTAssertThrowsError(try RootInitialization.run(root: plain, encrypt: true, environment: [:])) { error in
            XCTAssertEqual((error as? JobError)?.exitCode, .config)
            XCTAssertTrue("\(error)".contains("jobrun encrypt"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: plain.path + "/keys/store.key"))
        XCTAssertFalse(RootEncryptionState.of(plain, environment: [:]).encrypted)
    }
}
