import Foundation
import Jobs
import Postbox
import TestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// A link planted in `alerts/` after the run's layout check passed, while the job is running, is
/// refused when the run itself writes or removes its failure streak: the check at the start of
/// the next run is not what protects the victim. The kind below plants the link from inside the
/// run, the moment a local attacker racing the run would.
final class RunStateLinkDuringRunTests: XCTestCase {
    /// What the kind plants while it runs, and whether it then fails.
    enum Plant: String, Sendable {
        /// `alerts/` itself becomes a link to the victim folder.
        case folder
        /// `alerts/<job>` becomes a link to the victim file.
        case file
    }

    /// Plants `plant` under the root it runs on, then succeeds or fails as told.
    struct PlantingJob: JobKind {
        static let name = "plant-link"
        static let summary = "plants a link in alerts/ while it runs (a test of the runner)"
        static let reportEvent = "plant.report"
        static let usesCloud = false
        static let demo = KindDemo()

        static let plant = Param<String>("plant", default: "folder", doc: "folder or file")
        static let victim = Param<String>("victim", default: "", doc: "the victim folder")
        static let fail = Param<Bool>("fail", default: false, doc: "fail after planting")
        static let parameters: [any JobParameter] = [plant, victim, fail]

        func run(_ context: JobContext) async throws -> JobReport {
            let alerts = context.account.paths.root.alerts.path
            let victim = context.params[Self.victim]
            switch Plant(rawValue: context.params[Self.plant]) {
            case .folder?:
                try FileManager.default.removeItem(atPath: alerts)
                guard symlink(victim, alerts) == 0 else { throw JobError("cannot plant the folder link") }
            case .file?:
                unlink(alerts + "/" + Self.name)
                guard symlink(victim + "/" + Self.name, alerts + "/" + Self.name) == 0 else { throw JobError("cannot plant the file link") }
            case nil:
                throw JobError("unknown plant")
            }
            if context.params[Self.fail] { throw JobError("failing on purpose", retryable: false) }
            return JobReport(counters: [:], summary: ["planted"])
        }
    }

    private let kinds = JobKindRegistry.shipped.adding(PlantingJob())

    /// Runs the planting job once on a root whose `alerts/<job>` holds a streak of 2, with the
    /// victim folder holding a file named like the job; returns the root and the victim folder.
    private func run(_ plant: Plant, fail: Bool) async throws -> (DataRoot, String, RunResult, TemporaryDirectory) {
        let dir = TemporaryDirectory()
        let root = DataRoot(path: dir.file("root"))
        try root.createDirectories(accounts: [0])
        let victim = dir.file("victim")
        mkdir(victim, 0o700)
        try Data("victim".utf8).write(to: URL(fileURLWithPath: victim + "/" + PlantingJob.name))
        let alerts = root.alerts.path
        mkdir(alerts, 0o700)
        try Data("{\"job\":\"plant-link\",\"failures\":2,\"alerted\":false}\n".utf8).write(
            to: URL(fileURLWithPath: alerts + "/" + PlantingJob.name))
        chmod(alerts + "/" + PlantingJob.name, 0o600)
        XCTAssertEqual(try root.verifyLayout(), [], "the layout is clean when the run starts")

        let job = try JobFile.parse(
            yaml:
                "name: \(PlantingJob.name)\nkind: \(PlantingJob.name)\nretry:\n  backoffLimit: 0\nparams:\n  plant: \(plant.rawValue)\n  victim: \(victim)\n  fail: \(fail)\n",
            file: "plant.yaml", kinds: kinds)
        let sink = try LogSink(root: root, process: "test", console: .off)
        let runner = JobRunner(
            root: root, kinds: kinds, accounts: AccountContextPool(root: root), logger: JobLogger(sink: sink),
            temp: TempBox(root: root, process: "test"))
        let result = await runner.run(job)
        return (root, victim, result, dir)
    }

    private func assertVictimIntact(_ victim: String, _ context: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: victim), [PlantingJob.name], context, file: file, line: line)
        XCTAssertEqual(try String(contentsOfFile: victim + "/" + PlantingJob.name, encoding: .utf8), "victim", context, file: file, line: line)
    }

    func testASucceedingRunDoesNotRemoveThroughALinkedAlertsFolderPlantedWhileItRan() async throws {
        let (_, victim, result, dir) = try await run(.folder, fail: false)
        XCTAssertEqual(result.exitCode, .ok, result.message ?? "")
        assertVictimIntact(victim, "the streak is cleared beneath the root's descriptor, never through the link")
        _ = dir
    }

    func testAFailingRunDoesNotWriteThroughALinkedAlertsFolderPlantedWhileItRan() async throws {
        let (_, victim, result, dir) = try await run(.folder, fail: true)
        XCTAssertNotEqual(result.exitCode, .ok)
        assertVictimIntact(victim, "the streak is not written into the link's target")
        _ = dir
    }

    func testALinkPlantedAtTheStreakFileIsNeitherReadNorWrittenThrough() async throws {
        let (root, victim, result, dir) = try await run(.file, fail: true)
        XCTAssertNotEqual(result.exitCode, .ok)
        assertVictimIntact(victim, "the link is replaced by the new streak, never written through")
        var st = stat()
        XCTAssertEqual(lstat(root.alerts.path + "/" + PlantingJob.name, &st), 0)
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFREG, "the streak file is jobrun's own again")
        let streak = try String(contentsOfFile: root.alerts.path + "/" + PlantingJob.name, encoding: .utf8)
        XCTAssertTrue(streak.contains("\"failures\":1"), "the victim's contents were not read as a streak: \(streak)")

        let (_, victim2, succeeded, dir2) = try await run(.file, fail: false)
        XCTAssertEqual(succeeded.exitCode, .ok, succeeded.message ?? "")
        assertVictimIntact(victim2, "a success removes the link itself, never its target")
        _ = (dir, dir2)
    }
}
