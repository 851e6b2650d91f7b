import Foundation
import Jobs
import Postbox
import TestSupport
import XCTest

/// A kind added the way the docs say — one Swift file (`ExampleKind/CountMessagesJob.swift`),
/// one line adding it to the registry, one job file — is validated, listed, documented and run
/// like a shipped one.
final class ExampleKindTests: XCTestCase {
    let kinds = JobKindRegistry.shipped.adding(CountMessagesJob())
    let jobFile = TestPaths.repositoryRoot.appendingPathComponent("Tests/JobsTests/ExampleKind/count-messages.yaml")

    func testTheJobFileValidatesAgainstTheNewKind() throws {
        let job = try JobFile.load(contentsOf: jobFile, kinds: kinds)
        XCTAssertEqual(job.kind, "count-messages")
        XCTAssertEqual(job.params[CountMessagesJob.maxPeers], 10)
        XCTAssertEqual(job.params[CountMessagesJob.minimum], 1)
        // Without the line in the registry the kind is unknown, with a suggestion.
        XCTAssertThrowsError(try JobFile.load(contentsOf: jobFile)) { error in
            XCTAssertTrue("\(error)".contains("unknown job kind 'count-messages'"), "\(error)")
        }
        // Its parameters are checked like any kind's.
        XCTAssertThrowsError(try JobFile.parse(yaml: "name: c\nkind: count-messages\nparams:\n  maxPeer: 3\n", file: "c.yaml", kinds: kinds)) { error in
            XCTAssertTrue("\(error)".contains("c.yaml:4:3: unknown parameter 'maxPeer' for kind count-messages; did you mean 'maxPeers'?"), "\(error)")
        }
        XCTAssertTrue(KindReference.markdown(kinds).contains("| `minimum` | integer | — | 0 – 1000000 | fail when fewer messages are stored |"))
    }

    func testTheRunnerRunsIt() async throws {
        let dir = TemporaryDirectory()
        TestRoot.prepare(dir.file("root"))
        let root = DataRoot(path: dir.file("root"))
        try root.createDirectories(accounts: [0])
        let postbox = try Postbox(directory: root.account(0).postboxDatabase.path, key: TestRoot.key(ofRoot: root.path))
        try await postbox.transaction { tx in
            try tx.peers.set(Peer(id: PeerId(7), category: .group, title: "g"))
            try tx.messages.add((1...3).map { Message(id: MessageId(peerId: PeerId(7), namespace: MessageId.cloudNamespace, id: $0), timestamp: 100 + $0) })
        }
        let sink = try LogSink(root: root, process: "test", console: .off)
        let runner = JobRunner(
            root: root, kinds: kinds, accounts: AccountContextPool(root: root), logger: JobLogger(sink: sink),
            temp: TempBox(root: root, process: "test"))
        let result = await runner.run(try JobFile.load(contentsOf: jobFile, kinds: kinds))
        XCTAssertEqual(result.exitCode, .ok, result.message ?? "")
        XCTAssertEqual(result.report.counters["messages"], 3)
        XCTAssertEqual(result.report.counters["peers"], 1)
        let metrics = try String(contentsOfFile: dir.file("root/metrics/jobrun_count-messages.prom"), encoding: .utf8)
        XCTAssertTrue(metrics.contains("kind=\"count-messages\""), metrics)
    }
}
