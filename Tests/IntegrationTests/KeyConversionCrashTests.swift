import Foundation
import Postbox
import TestSupport
import XCTest

/// `jobrun encrypt` and `jobrun rekey` killed (SIGKILL) at random points, 20 times each: every
/// store still opens, with the old key or the new one, holding every message, and a rerun
/// finishes the job. Both refuse to start while another process has the root's stores open.
final class KeyConversionCrashTests: XCTestCase {
    static let messagesPerStore = 6_000
    static let points = ["convert-after-next-key", "convert-after-export", "convert-after-rename", "convert-before-key-install"]

    /// A plaintext root with two accounts' stores and the shared media tier's index.
    func makeTemplate(_ directory: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        chmod(directory, 0o700)
        var stores: [String] = []
        for relative in ["account-0/postbox/db/db.sqlite", "account-1/postbox/db/db.sqlite", "media-tier/db.sqlite"] {
            let path = directory + "/" + relative
            let postbox = try Postbox(path: path)
            try postbox.transactionSync { tx in
                try tx.peers.set(Peer(id: PeerId(1), category: .group, title: "crash test"))
                try tx.messages.add(
                    (0..<Self.messagesPerStore).map { i in
                        Message(
                            id: MessageId(peerId: PeerId(1), id: Int32(i + 1)), timestamp: Int32(i),
                            text: "message \(i) of a store that is encrypted while being killed, padded to a realistic length")
                    })
            }
            stores.append(relative)
        }
        for folder in ["account-0", "account-0/postbox", "account-1", "account-1/postbox", "media-tier"] { chmod(directory + "/" + folder, 0o700) }
        return stores
    }

    func copy(_ source: String, to destination: String) throws {
        let result = try SystemCommand.status(["/bin/cp", "-a", source, destination])
        XCTAssertEqual(result.status, 0, result.stderr)
    }

    /// The keys a store may be under after an interruption: none, the installed key, the next one.
    func candidateKeys(_ root: String) throws -> [StoreKey?] {
        var keys: [StoreKey?] = [nil]
        for path in [root + "/keys/store.key", root + "/keys/store.key.next"] where FileManager.default.fileExists(atPath: path) {
            keys.append(try EncryptedRoot.key(path))
        }
        return keys
    }

    /// Every store opens with one of `keys` and holds every message; returns the index of the key
    /// each opened with.
    @discardableResult
    func assertStoresIntact(_ root: String, _ stores: [String], keys: [StoreKey?], context: String, file: StaticString = #filePath, line: UInt = #line) -> [Int]
    {
        var used: [Int] = []
        for store in stores {
            var opened = false
            for (index, key) in keys.enumerated() {
                guard let postbox = try? Postbox(path: root + "/" + store, readOnly: true, key: key) else { continue }
                let count = try? postbox.readSync { try $0.messages.count(peer: PeerId(1)) }
                XCTAssertEqual(count, Self.messagesPerStore, "\(context): \(store) lost messages", file: file, line: line)
                opened = true
                used.append(index)
                break
            }
            XCTAssertTrue(opened, "\(context): \(store) opens with neither the old key nor the new one", file: file, line: line)
        }
        return used
    }

    func run(_ binary: String, _ arguments: [String], failpoints: String? = nil) throws -> ChildProcess {
        try ChildProcess(binary, arguments, environment: failpoints.map { ["JOBRUN_FAILPOINTS": $0] } ?? [:])
    }

    func testEncryptAndRekeyKilledAtRandomPointsLeaveEveryStoreWholeAndARerunFinishes() throws {
        let scratch = TemporaryDirectory(prefix: "key-conversion")
        let binary = Products.executable("jobrun")
        let template = scratch.file("plain")
        let stores = try makeTemplate(template)
        let encryptedTemplate = scratch.file("encrypted")
        try copy(template, to: encryptedTemplate)
        let started = Date()
        let full = try run(binary, ["encrypt", "--root", encryptedTemplate])
        XCTAssertEqual(full.wait(timeout: 600), 0, full.stderr)
        let fullSeconds = Date().timeIntervalSince(started)
        print("encrypt of 3 stores of \(Self.messagesPerStore) messages: \(full.stdout)")
        assertStoresIntact(encryptedTemplate, stores, keys: [try EncryptedRoot.key(encryptedTemplate + "/keys/store.key")], context: "template")
        XCTAssertEqual(try SqliteValueBox.isEncrypted(path: encryptedTemplate + "/" + stores[0]), true)

        var generator = SystemRandomNumberGenerator()
        for operation in ["encrypt", "rekey"] {
            var interrupted = 0
            for round in 0..<20 {
                let root = scratch.file("\(operation)-\(round)")
                try copy(operation == "encrypt" ? template : encryptedTemplate, to: root)
                let oldKeys = try candidateKeys(root)
                let context = "\(operation) round \(round)"
                let p: ChildProcess
                if round % 2 == 0 {
                    let point = Self.points[(round / 2) % Self.points.count]
                    p = try run(binary, [operation, "--root", root], failpoints: "\(point)=kill")
                    XCTAssertEqual(p.wait(timeout: 600), 9, "\(context): killed at \(point): \(p.stderr)")
                } else {
                    p = try run(binary, [operation, "--root", root])
                    let delay = Double.random(in: 0.02...(max(0.1, fullSeconds * 1.1)), using: &generator)
                    Thread.sleep(forTimeInterval: delay)
                    p.signal(SIGKILL)
                    _ = p.wait(timeout: 600)
                }
                let keys = try candidateKeys(root)
                assertStoresIntact(root, stores, keys: keys, context: context)
                if FileManager.default.fileExists(atPath: root + "/keys/store.key.next") {
                    interrupted += 1
                    let status = try run(binary, ["status", "--root", root])
                    XCTAssertEqual(status.wait(), 78, "\(context): \(status.stderr)")
                    XCTAssertTrue(status.stderr.contains("interrupted"), status.stderr)
                }
                let rerun = try run(binary, [operation, "--root", root])
                XCTAssertEqual(rerun.wait(timeout: 600), 0, "\(context): the rerun finishes: \(rerun.stderr)")
                let installed = try EncryptedRoot.key(root + "/keys/store.key")
                XCTAssertEqual(assertStoresIntact(root, stores, keys: [installed], context: context + " after the rerun"), [0, 0, 0])
                if operation == "rekey" { XCTAssertFalse(oldKeys.contains(installed), "\(context): the key changed") }
                let leftovers = (try? FileManager.default.subpathsOfDirectory(atPath: root))?.filter { $0.hasSuffix(".converting") || $0.hasSuffix(".next") }
                XCTAssertEqual(leftovers, [], context)
                try? FileManager.default.removeItem(atPath: root)
            }
            print("\(operation): \(interrupted) of 20 kills left the conversion half done")
            XCTAssertGreaterThan(interrupted, 4, "\(operation): the kills land inside the conversion")
        }
    }

    func testAConversionRefusesWhileAnotherProcessHasTheStoresOpen() throws {
        let h = JobrunHarness(root: .plaintext)  // what `encrypt` would convert
        try h.writeCleanupJob("cleanup")
        XCTAssertEqual(try h.run(["run", "cleanup"]).status, 0)
        let holder = try h.start(["run", "cleanup"], failpoints: "after-start-record=sleep(120000)")
        defer {
            holder.signal(SIGKILL)
            _ = holder.wait()
        }
        // Wait until the run holds the root's stores lock.
        let lock = h.root + "/locks/stores.lock"
        let deadline = Date().addingTimeInterval(120)
        var held = false
        while Date() < deadline, !held {
            let fd = open(lock, O_RDONLY)
            if fd >= 0 {
                if flock(fd, LOCK_EX | LOCK_NB) != 0 { held = true } else { flock(fd, LOCK_UN) }
                close(fd)
            }
            if !held { Thread.sleep(forTimeInterval: 0.1) }
        }
        XCTAssertTrue(held, "the run holds the stores lock")
        let before = EncryptedRoot.contents(of: h.account + "/postbox/db")
        for operation in ["encrypt", "rekey"] {
            let refused = try h.run([operation])
            XCTAssertEqual(refused.status, 75, "\(operation): \(refused.stderr)")
            XCTAssertTrue(refused.stderr.contains("another process"), refused.stderr)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.root + "/keys/store.key"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.root + "/keys/store.key.next"))
        XCTAssertEqual(EncryptedRoot.contents(of: h.account + "/postbox/db").keys, before.keys)
    }
}
