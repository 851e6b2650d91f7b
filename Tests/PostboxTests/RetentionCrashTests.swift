import Foundation
import Postbox
import TestSupport
import XCTest

/// A retention run SIGKILLed at random points, in a real child process: after every kill the
/// store is consistent (messages and index entries agree, no dangling reference, holes cover
/// only what is missing) and the next run finishes the work, ending where an uninterrupted run
/// ends.
final class RetentionCrashTests: XCTestCase {
    let testkit = Products.executable("jobrun-testkit")

    func testSigkillAtRandomPointsLeavesAConsistentStoreAndTheNextRunFinishes() throws {
        let dir = TemporaryDirectory()
        let fixture = dir.file("fixture.sqlite")
        let made = try ChildProcess.run(testkit, ["retention-fixture", fixture, "120", "120"], timeout: 600)
        XCTAssertEqual(made.status, 0, made.stderr)
        let maxPerPeer = 40, keep = 10, batch = 150

        // The reference: one uninterrupted run, timed.
        let reference = dir.file("reference.sqlite")
        try Self.copyStore(fixture, to: reference)
        let started = Date()
        let full = try ChildProcess.run(testkit, ["retention-run", reference, "\(maxPerPeer)", "\(keep)", "\(batch)"], timeout: 600)
        let duration = Date().timeIntervalSince(started)
        XCTAssertEqual(full.status, 0, full.stderr)
        XCTAssertEqual(full.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "done \(120 * (120 - maxPerPeer))")
        let expected = try Postbox(path: reference, readOnly: true).readSync { tx in
            try (0..<120).map { try tx.messages.count(peer: PeerId(Int64(1000 + $0))) }
        }

        var rng = SystemRandomNumberGenerator()
        var killedMidway = 0
        for trial in 0..<20 {
            let db = dir.file("trial-\(trial).sqlite")
            try Self.copyStore(fixture, to: db)
            let child = try ChildProcess(testkit, ["retention-run", db, "\(maxPerPeer)", "\(keep)", "\(batch)"])
            // Process start-up included: from early in the run to past its end.
            Thread.sleep(forTimeInterval: Double.random(in: 0.02...(duration * 0.95), using: &rng))
            child.signal(SIGKILL)
            let status = child.wait()
            if status != 0 { killedMidway += 1 }

            // One connection at a time in this process (opening a second one on the same file
            // releases the first one's POSIX locks).
            do {
                let postbox = try Postbox(path: db)
                XCTAssertEqual(try postbox.integrityCheck(), ["ok"], "trial \(trial)")
                XCTAssertEqual(try postbox.checkHistoryConsistency(), [], "trial \(trial)")
                // Holes cover exactly the removed prefix of every peer so far.
                try postbox.readSync { tx in
                    for p in 0..<120 {
                        let peer = PeerId(Int64(1000 + p))
                        let lowest = try tx.messages.scanIndexesFirst(peer: peer)
                        let holes = try tx.holes.entries(peer: peer)
                        if let lowest, lowest > 1 {
                            XCTAssertEqual(holes, [HistoryHole(1...(lowest - 1), kind: .trimmed)], "trial \(trial) peer \(p)")
                        } else {
                            XCTAssertEqual(holes, [], "trial \(trial) peer \(p)")
                        }
                    }
                }
            }
            // The next run finishes the work.
            let resumed = try ChildProcess.run(testkit, ["retention-run", db, "\(maxPerPeer)", "\(keep)", "\(batch)"], timeout: 600)
            XCTAssertEqual(resumed.status, 0, resumed.stderr)
            let counts = try Postbox(path: db, readOnly: true).readSync { tx in
                try (0..<120).map { try tx.messages.count(peer: PeerId(Int64(1000 + $0))) }
            }
            XCTAssertEqual(counts, expected, "trial \(trial)")
            XCTAssertEqual(try Postbox(path: db).checkHistoryConsistency(), [], "trial \(trial)")
            try? FileManager.default.removeItem(atPath: db)
        }
        XCTAssertGreaterThanOrEqual(killedMidway, 10, "most kills landed inside the run")
    }

    /// A copy of a closed store: the database file and its WAL, which keeps the last commits
    /// when it is small.
    static func copyStore(_ from: String, to: String) throws {
        try FileManager.default.copyItem(atPath: from, toPath: to)
        if FileManager.default.fileExists(atPath: from + "-wal") { try FileManager.default.copyItem(atPath: from + "-wal", toPath: to + "-wal") }
    }
}

private extension MessageHistoryTable {
    /// The lowest stored id of `peer`, if any.
    func scanIndexesFirst(peer: PeerId) throws -> Int32? {
        var lowest: Int32?
        try scanIndexes(peer: peer, newestFirst: false) { index, _ in
            lowest = min(lowest ?? index.id.id, index.id.id)
            return true
        }
        return lowest
    }
}
