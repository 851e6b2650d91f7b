import Foundation
import Postbox
import TestSupport
import XCTest

/// An encrypted data root as an operator runs it with the built `jobrun`: one key for every
/// process (`init --encrypt`, runs, `status`, `stats`, `enqueue-upload`), no message text or
/// file reference in clear in the database files, and clear refusals (exit 78) that change no
/// byte of a store when the key and the store do not match. Each test sets its root's key up
/// itself, so every root starts plaintext whatever kind the other tests make.
final class EncryptionAtRestIntegrationTests: XCTestCase {
    func testOneKeyForEveryCommandAndNoMessageOrReferenceInClear() throws {
        let cloud = try startCloudd(["--seed", "11", "--dcs", "1", "--peers", "3", "--messages-per-peer", "12", "--cdn-fraction", "0"])
        let h = JobrunHarness(root: .plaintext)
        let initialized = try h.run(["init", "--encrypt"])
        XCTAssertEqual(initialized.status, 0, initialized.stderr)
        let keyPath = h.root + "/keys/store.key"
        XCTAssertTrue(initialized.stdout.contains(keyPath), initialized.stdout)
        XCTAssertEqual(try EncryptedRoot.mode(keyPath), 0o600)
        let keyText = try String(contentsOfFile: keyPath, encoding: .utf8)
        XCTAssertEqual(try h.run(["init", "--encrypt"]).status, 0)
        XCTAssertEqual(try String(contentsOfFile: keyPath, encoding: .utf8), keyText, "the key is created once")

        try h.configureAccount(for: cloud)
        try h.syncOnce(initialMessages: 10)
        let database = h.account + "/postbox/db/db.sqlite"
        XCTAssertEqual(try SqliteValueBox.isEncrypted(path: database), true)
        let key = try EncryptedRoot.key(keyPath)
        let (texts, references) = try EncryptedRoot.secrets(try Postbox(path: database, readOnly: true, key: key))
        XCTAssertGreaterThan(texts.count, 5)
        XCTAssertGreaterThan(references.count, 0)
        let found = EncryptedRoot.filesContaining(texts.map { Data($0.utf8) } + references, under: h.account + "/postbox/db")
        XCTAssertEqual(found, [], "message texts or file references in clear")

        let status = try h.run(["status"])
        XCTAssertEqual(status.status, 0, status.stderr)
        XCTAssertTrue(status.stdout.contains("data root: encrypted at rest (key file \(keyPath))"), status.stdout)
        let json = try h.run(["status", "--json"])
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((object["encryption"] as? [String: Any])?["encrypted"] as? Bool, true, json.stdout)
        XCTAssertEqual(try h.run(["stats"]).status, 0)
        XCTAssertEqual(try h.run(["stats", "--database"]).status, 0)
        let file = h.dir.file("note.txt")
        try "queued under the root's key".write(toFile: file, atomically: true, encoding: .utf8)
        let peer = try XCTUnwrap(try Postbox(path: database, readOnly: true, key: key).readSync { try $0.peers.all() }.first?.id.rawValue)
        let enqueued = try h.run(["enqueue-upload", file, "--peer", String(peer)])
        XCTAssertEqual(enqueued.status, 0, enqueued.stderr)

        let hex = keyText.trimmingCharacters(in: .whitespacesAndNewlines)
        for output in [initialized.stdout, initialized.stderr, status.stdout, json.stdout, enqueued.stdout, h.allLogText()] {
            XCTAssertFalse(output.contains(hex), "the key never reaches an output or a log")
        }
        let metrics = EncryptedRoot.filesContaining([Data(hex.utf8)], under: h.root + "/metrics")
        XCTAssertEqual(metrics, [])
    }

    func testAMismatchedKeyIsExit78AndChangesNoByteOfTheStore() throws {
        let h = JobrunHarness(root: .plaintext)
        try h.writeCleanupJob("cleanup")
        XCTAssertEqual(try h.run(["init", "--encrypt"]).status, 0)
        let first = try h.run(["run", "cleanup"])
        XCTAssertEqual(first.status, 0, first.stderr)
        let keyPath = h.root + "/keys/store.key"
        let keyText = try String(contentsOfFile: keyPath, encoding: .utf8)
        let store = h.account + "/postbox/db"
        let before = EncryptedRoot.contents(of: store)
        XCTAssertFalse(before.isEmpty)

        func refused(_ environment: [String: String] = [:], _ words: [String], file: StaticString = #filePath, line: UInt = #line) throws {
            for command in [["run", "cleanup"], ["status"]] {
                let p = try ChildProcess(h.binary, h.arguments(command), environment: environment)
                XCTAssertEqual(p.wait(), 78, "\(command): \(p.stderr)", file: file, line: line)
                for word in words { XCTAssertTrue(p.stderr.contains(word), "\(command) names \(word): \(p.stderr)", file: file, line: line) }
                XCTAssertFalse(p.stderr.contains(keyText.prefix(16)), file: file, line: line)
            }
            XCTAssertEqual(EncryptedRoot.contents(of: store), before, "no byte of the store changed", file: file, line: line)
        }

        chmod(keyPath, 0o644)
        try refused([:], [keyPath, "chmod 600"])
        chmod(keyPath, 0o600)

        let other = h.dir.file("other.key")
        try EncryptedRoot.writeKey(other)
        try refused(["JOBRUN_KEY_FILE": other], ["db.sqlite", "key does not open"])

        let missing = h.dir.file("missing.key")
        try refused(["JOBRUN_KEY_FILE": missing], [missing, "does not exist"])

        try FileManager.default.moveItem(atPath: keyPath, toPath: keyPath + ".away")
        try refused([:], ["db.sqlite", "encrypted"])
        try FileManager.default.moveItem(atPath: keyPath + ".away", toPath: keyPath)
        XCTAssertEqual(try h.run(["run", "cleanup"]).status, 0, "the right key opens it again")

        // A plaintext root opened with a key configured.
        let plain = JobrunHarness(root: .plaintext)
        try plain.writeCleanupJob("cleanup")
        XCTAssertEqual(try plain.run(["run", "cleanup"]).status, 0)
        let plainBefore = EncryptedRoot.contents(of: plain.account + "/postbox/db")
        let p = try ChildProcess(plain.binary, plain.arguments(["run", "cleanup"]), environment: ["JOBRUN_KEY_FILE": other])
        XCTAssertEqual(p.wait(), 78, p.stderr)
        XCTAssertTrue(p.stderr.contains("not encrypted"), p.stderr)
        XCTAssertEqual(EncryptedRoot.contents(of: plain.account + "/postbox/db"), plainBefore)
    }

    /// A systemd credential (what `LoadCredential=` hands the service) is the key, and wins over
    /// a key file of the root.
    func testASystemdCredentialIsTheKey() throws {
        let h = JobrunHarness(root: .plaintext)
        try h.writeCleanupJob("cleanup")
        let credentials = h.dir.file("credentials")
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try EncryptedRoot.writeKey(credentials + "/jobrun-store-key", mode: 0o400)
        let environment = ["CREDENTIALS_DIRECTORY": credentials]
        let run = try ChildProcess(h.binary, h.arguments(["run", "cleanup"]), environment: environment)
        XCTAssertEqual(run.wait(), 0, run.stderr)
        let key = try EncryptedRoot.key(credentials + "/jobrun-store-key")
        XCTAssertEqual(try Postbox(path: h.account + "/postbox/db/db.sqlite", readOnly: true, key: key).readSync { try $0.jobRuns.jobNames() }, ["cleanup"])
        let status = try ChildProcess(h.binary, h.arguments(["status"]), environment: environment)
        XCTAssertEqual(status.wait(), 0, status.stderr)
        XCTAssertTrue(status.stdout.contains("systemd credential"), status.stdout)
        XCTAssertEqual(try h.run(["status"]).status, 78, "without the credential the store does not open")
    }
}

/// Helpers for tests of encrypted roots.
enum EncryptedRoot {
    static func mode(_ path: String) throws -> mode_t {
        var st = stat()
        guard stat(path, &st) == 0 else { throw POSIXError(.ENOENT) }
        return st.st_mode & 0o777
    }

    /// The key in a key file (64 hex digits).
    static func key(_ path: String) throws -> StoreKey {
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return try StoreKey(rawBytes: bytes)
    }

    /// Writes a new random key file.
    static func writeKey(_ path: String, mode: mode_t = 0o600) throws {
        let hex = StoreKey.random().withBytes { $0.map { String(format: "%02x", $0) }.joined() }
        try (hex + "\n").write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, mode)
    }

    /// Message texts (of 12 characters or more) and file references a store holds.
    static func secrets(_ postbox: Postbox) throws -> (texts: [String], references: [Data]) {
        try postbox.readSync { tx in
            var texts: [String] = []
            for peer in try tx.peers.all() {
                try tx.messages.scan(peer: peer.id) { message in
                    if message.text.utf8.count >= 12 { texts.append(message.text) }
                    return true
                }
            }
            var references: [Data] = []
            try tx.mediaReferences.obtained(before: .max) { record in
                if record.fileReference.count >= 8 { references.append(record.fileReference) }
                return true
            }
            return (texts, references)
        }
    }

    /// Files under `directory` (recursively) that contain any of `needles`, with the needle's index.
    static func filesContaining(_ needles: [Data], under directory: String) -> [String] {
        var found: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let relative = enumerator?.nextObject() as? String {
            let path = directory + "/" + relative
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                let data = FileManager.default.contents(atPath: path)
            else { continue }
            for (index, needle) in needles.enumerated() where data.range(of: needle) != nil {
                found.append("\(relative) holds secret #\(index)")
            }
        }
        return found
    }

    /// The bytes of the database file and its WAL under `directory`.
    static func contents(of directory: String) -> [String: Data] {
        var out: [String: Data] = [:]
        for name in ["db.sqlite", "db.sqlite-wal"] {
            if let data = FileManager.default.contents(atPath: directory + "/" + name) { out[name] = data }
        }
        return out
    }
}
