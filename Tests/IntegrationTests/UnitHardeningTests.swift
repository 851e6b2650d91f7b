import Foundation
import TestSupport
import XCTest

/// The units `jobrun units` writes for the shipped jobs, per job and templated: every service
/// rates 3.0 or better in `systemd-analyze security --offline=true`, and every unit passes
/// `systemd-analyze verify` with nothing on stderr.
final class UnitHardeningTests: XCTestCase {
    func testEveryGeneratedServiceIsHardenedAndVerifiesClean() throws {
        let analyze = "/usr/bin/systemd-analyze"
        guard FileManager.default.isExecutableFile(atPath: analyze) else {
            throw FixtureMissing("systemd-analyze is not installed: run scripts/install-deps.sh (package systemd)")
        }
        let h = JobrunHarness()
        let shipped = MetricsConventionTests.repository + "/jobs"
        for name in try FileManager.default.contentsOfDirectory(atPath: shipped) where name.hasSuffix(".yaml") {
            try FileManager.default.copyItem(atPath: shipped + "/" + name, toPath: h.jobsDir + "/" + name)
        }
        try h.writeJob("described", "name: described\nkind: upload-queue\ndescription: Send queued uploads (100% of them)\nschedule: \"*/5 * * * *\"\n")
        var report: [String] = []
        for mode in [[], ["--template"], ["--dynamic-user"]] {
            let out = h.dir.file("units" + mode.joined())
            // No --root: the units get the default root under /var/lib (a StateDirectory=).
            let p = try ChildProcess(h.binary, ["units", "--out", out, "--binary", "/bin/true", "--jobs-dir", h.jobsDir] + mode)
            let result = (status: p.wait(), stdout: p.stdout, stderr: p.stderr)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertTrue(result.stdout.contains("sudo systemctl daemon-reload"), "units prints how to install them: \(result.stdout)")
            XCTAssertTrue(result.stdout.contains("sudo systemctl enable --now "), result.stdout)
            let files = try FileManager.default.contentsOfDirectory(atPath: out).sorted().map { out + "/" + $0 }
            let services = files.filter { $0.hasSuffix(".service") }
            XCTAssertTrue(services.contains { $0.hasSuffix("/jobrun-failure@.service") }, "the OnFailure= template is written: \(files)")
            for service in services {
                let text = try String(contentsOfFile: service, encoding: .utf8)
                XCTAssertTrue(text.contains("OnFailure=") || service.hasSuffix("jobrun-failure@.service"), service)
                XCTAssertFalse(text.contains("User=root"), service)
                XCTAssertTrue(text.contains("User=jobrun") || text.contains("DynamicUser=yes"), service)
                XCTAssertTrue(text.contains("StateDirectory=jobrun\n"), service)
                let rated = try ChildProcess.run(analyze, ["security", "--offline=true", "--no-pager", service])
                let exposure = try XCTUnwrap(Self.exposure(rated.stdout), "\(service): \(rated.stdout)\(rated.stderr)")
                XCTAssertLessThanOrEqual(exposure, 3.0, "\(service) rates \(exposure)")
                report.append("\((service as NSString).lastPathComponent)\(mode.joined()): \(exposure)")
            }
            let verify = try ChildProcess.run(analyze, ["verify"] + files)
            XCTAssertEqual(verify.stderr, "", "systemd-analyze verify prints nothing (\(mode))")
        }
        let described = try String(contentsOfFile: h.dir.file("units") + "/jobrun-described.service", encoding: .utf8)
        XCTAssertTrue(described.contains("Description=jobrun described: Send queued uploads (100%% of them)\n"), described)
        print("systemd-analyze security exposure: " + report.joined(separator: ", "))
    }

    /// The figure of "→ Overall exposure level for X: 1.2 OK".
    static func exposure(_ output: String) -> Double? {
        guard let line = output.split(separator: "\n").last(where: { $0.contains("Overall exposure level") }),
            let value = line.split(separator: ":").last?.split(separator: " ").first
        else { return nil }
        return Double(value)
    }
}
