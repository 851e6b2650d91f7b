import Foundation
import TestSupport
import XCTest

/// The suites that open a data root's stores, run a second time with every root and store
/// encrypted at rest (`JOBRUN_TEST_ROOT=encrypted`, see `TestRoot`): so `swift test` proves
/// both kinds of root. The pass is this test process's own executable started again with that
/// variable and the suites' names, the way `swift test --filter` starts it; it never starts
/// another pass (a process of encrypted roots skips this test).
final class EncryptedRootPassTests: XCTestCase {
    /// The suites of the encrypted pass: each opens a Postbox, through the built `jobrun` (or
    /// the runner, or a kind's engine), and together they open every store jobrun keeps (an
    /// account's store and the shared media tier's index, on SQLite and on PostgreSQL) and every
    /// path of an encrypted root's layout. Left out: suites that open no Postbox (configuration,
    /// units, metrics' format, cloudd, transfers, MediaBox); those about one kind of root, which
    /// choose it themselves (encryption at rest, key conversion, the demo); and, for the pass's
    /// time, those that mostly wait for the clock or start network namespaces over the same
    /// stores as the suites here (the cluster's schedule, the multi-host fleet, the prefetch and
    /// cleanup schedule), which pass encrypted when run with the variable.
    static let suites = [
        // Job level: the built binary on a data root.
        "IntegrationTests.SyncHistoryIntegrationTests",
        "IntegrationTests.RunnerIntegrationTests",
        "IntegrationTests.UnattendedRunTests",
        "IntegrationTests.OperatorEdgeTests",
        "IntegrationTests.HardeningIntegrationTests",
        "IntegrationTests.AlertIntegrationTests",
        "IntegrationTests.MetricsEndpointTests",
        "IntegrationTests.KubernetesPodTests",
        "IntegrationTests.HistoryRetentionIntegrationTests",
        "IntegrationTests.HistoryRetentionScheduleTests",
        "IntegrationTests.RevalidateReferencesIntegrationTests",
        "IntegrationTests.PrefetchChatMediaIntegrationTests",
        "IntegrationTests.PrefetchCrashIntegrationTests",
        "IntegrationTests.RepresentationIntegrationTests",
        "IntegrationTests.UploadQueueIntegrationTests",
        "IntegrationTests.UploadBucketStagingIntegrationTests",
        "IntegrationTests.SharedMediaTierIntegrationTests",
        "IntegrationTests.PostgresStoreIntegrationTests",
        "IntegrationTests.ClusterRunLockIntegrationTests",
        "IntegrationTests.RootLayoutIntegrationTests",
        // Store level: the runner and the kinds' engines over a Postbox of their own.
        "JobsTests.JobRunnerTests",
        "JobsTests.ExampleKindTests",
        "JobsTests.PrefetchSelectionTests",
        "JobsTests.PrefetchPolicyTests",
        "CloudCoreTests.HistorySyncTests",
        "CloudCoreTests.RevalidationTests",
        "CloudCoreTests.SharedMediaTierCleanupTests",
        "CloudCoreTests.UploadBatchTests",
        "CloudCoreTests.MultipartUploadTests",
        "CloudCoreTests.MultipartUploadResumeTests",
        "CloudCoreTests.UploadInterruptionTests",
        "CloudCoreTests.StagedFileSwapTests",
        "PostboxTests.RetentionTests",
        "PostboxTests.DecoderIndexTests",
        "PostboxTests.StoreFileConfinementTests",
        "PostboxTests.ProcessTests/testTwoProcessesOpeningAndClosingOneStoreAtOnceManyTimesLoseNothing",
    ]

    func testTheSuitesThatOpenStoresPassOnEncryptedRoots() throws {
        guard TestRoot.kind == .plaintext else { throw XCTSkip("this process is the encrypted pass") }
        let executable = try XCTUnwrap(Bundle.main.executablePath, "the test process's own executable")
        let started = Date()
        let pass = try ChildProcess(
            executable, [Self.suites.joined(separator: ",")], environment: [TestRoot.variable: TestRoot.Kind.encrypted.rawValue])
        let status = pass.wait(timeout: 45 * 60)
        let seconds = Date().timeIntervalSince(started)
        let output = pass.stdout + pass.stderr
        let lines = output.split(separator: "\n")
        let failures = lines.filter { $0.contains(": error: ") || $0.contains("' failed (") }
        let summary = lines.last { $0.hasPrefix("\t Executed ") } ?? "no summary"
        print("encrypted pass: \(Self.suites.count) suites in \(Int(seconds.rounded())) s: \(summary.trimmingCharacters(in: .whitespaces))")
        XCTAssertEqual(status, 0, "the encrypted pass failed:\n" + failures.joined(separator: "\n") + "\n" + lines.suffix(30).joined(separator: "\n"))
        for suite in Self.suites {
            let name = suite.split(separator: "/")[0].split(separator: ".").last.map(String.init) ?? suite
            XCTAssertTrue(output.contains("Test Suite '\(name)' passed"), "\(suite) ran and passed on encrypted roots")
        }
    }
}
