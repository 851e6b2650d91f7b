import Foundation
import Jobs
import Postbox
import TestSupport
import XCTest

/// The README's first command: `jobrun demo` runs every kind against its embedded cloud and
/// says what each did.
final class DemoIntegrationTests: XCTestCase {
    func testDemoRunsEveryKindAndSummarizes() throws {
        let dir = TemporaryDirectory(prefix: "jobrun-demo")
        let p = try ChildProcess(Products.executable("jobrun"), ["demo", "--json", "--root", dir.file("root")])
        let status = p.wait(timeout: 300)
        XCTAssertEqual(status, 0, p.stderr)
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(p.stdout.utf8)) as? [String: Any], p.stdout)
        let runs = try XCTUnwrap(summary["runs"] as? [[String: Any]])
        // Every shipped kind, in the registry's order: a kind added to the registry joins the demo.
        XCTAssertEqual(runs.map { $0["job"] as? String }, JobKindRegistry.shipped.names)
        XCTAssertTrue(runs.allSatisfy { $0["outcome"] as? String == "succeeded" }, "\(runs)")
        func counter(_ job: String, _ name: String) -> Int? {
            ((runs.first { $0["job"] as? String == job }?["counters"] as? [String: Any])?[name] as? NSNumber)?.intValue
        }
        XCTAssertGreaterThan(counter("sync-history", "messages_stored") ?? 0, 0)
        XCTAssertGreaterThan(counter("prefetch-chat-media", "downloaded") ?? 0, 0)
        XCTAssertEqual(counter("prefetch-chat-media", "failed"), 0)
        // Large videos as header-first prefixes (videoPrefix: 512KiB).
        XCTAssertGreaterThan(counter("prefetch-chat-media", "video_prefixes") ?? 0, 0)
        // The prefetched photos' thumbnails, placeholders and display sizes.
        XCTAssertGreaterThan(counter("generate-representations", "generated_thumbnail") ?? 0, 0)
        XCTAssertEqual(counter("generate-representations", "generated_thumbnail"), counter("generate-representations", "generated_display"))
        XCTAssertEqual(counter("generate-representations", "failed"), 0)
        XCTAssertGreaterThan(counter("revalidate-references", "parents_refreshed") ?? 0, 0)
        XCTAssertEqual(counter("upload-queue", "items_sent"), 3)
        XCTAssertGreaterThan(counter("time-based-cleanup", "files_evicted") ?? 0, 0)
        XCTAssertLessThanOrEqual(counter("time-based-cleanup", "cache_bytes") ?? .max, 8 << 20, "cleanup brought the cache under its 8 MiB limit")
        XCTAssertGreaterThan(counter("history-retention", "messages_removed") ?? 0, 0, "retention trimmed every chat to 20 messages")
        // Every expired reference came back with one call per parent entity.
        XCTAssertEqual((summary["max_revalidation_calls_per_parent"] as? NSNumber)?.intValue, 1)
        XCTAssertEqual((summary["revalidated_parents"] as? NSNumber)?.intValue, counter("revalidate-references", "parents_refreshed"))
    }

    /// `jobrun demo --encrypt`: the whole demo on an encrypted root, which `status` then reads
    /// with the same key.
    func testTheDemoRunsOnAnEncryptedRoot() throws {
        let dir = TemporaryDirectory(prefix: "jobrun-demo")
        let root = dir.file("root")
        let binary = Products.executable("jobrun")
        let p = try ChildProcess(binary, ["demo", "--encrypt", "--json", "--root", root])
        XCTAssertEqual(p.wait(timeout: 300), 0, p.stderr)
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(p.stdout.utf8)) as? [String: Any], p.stdout)
        XCTAssertEqual(summary["encrypted"] as? Bool, true)
        let runs = try XCTUnwrap(summary["runs"] as? [[String: Any]])
        XCTAssertEqual(runs.map { $0["job"] as? String }, JobKindRegistry.shipped.names)
        XCTAssertTrue(runs.allSatisfy { $0["outcome"] as? String == "succeeded" }, "\(runs)")
        XCTAssertEqual(try SqliteValueBox.isEncrypted(path: root + "/account-0/postbox/db/db.sqlite"), true)
        let status = try ChildProcess(binary, ["status", "--root", root])
        XCTAssertEqual(status.wait(), 0, status.stderr)
        XCTAssertTrue(status.stdout.contains("sync-history") && status.stdout.contains("encrypted at rest (key file \(root)/keys/store.key)"), status.stdout)
    }
}
