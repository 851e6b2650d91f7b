import Foundation
import XCTest

@testable import Jobs

/// `jobrun units --kubernetes`: one CronJob per scheduled job, valid against the Kubernetes
/// schemas (PyPI's kubernetes-validate, installed by scripts/install-deps.sh).
final class KubernetesCronJobWriterTests: XCTestCase {
    func testCronJobsCarryTheJobsScheduleAndValidate() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var jobs = try JobCatalog.loadStrict(directory: TestPaths.repositoryRoot.appendingPathComponent("jobs")).jobs
        jobs.append(
            try JobFile.parse(
                yaml: """
                    name: Odd_One
                    kind: upload-queue
                    schedule: "0 0 13 * FRI"
                    timeZone: Europe/Berlin
                    timeout: 90s
                    concurrencyPolicy: Replace
                    startingDeadline: 5m
                    retry:
                      backoffLimit: 2
                    """, file: "odd.yaml"))
        jobs.append(try JobFile.parse(yaml: "name: by-hand\nkind: upload-queue\n", file: "hand.yaml"))
        jobs.append(try JobFile.parse(yaml: "name: dormant\nkind: upload-queue\nenabled: false\nschedule: \"*/5 * * * *\"\n", file: "dormant.yaml"))
        let writer = KubernetesCronJobWriter(
            options: .init(image: "registry.example/jobrun:1.0", namespace: "media", pushgateway: Pushgateway("http://pushgateway.monitoring:9091")))
        var files = try writer.write(jobs: jobs, to: directory)
        XCTAssertEqual(files.count, jobs.count - 1, "an unscheduled job has no CronJob")
        files.append(try writer.writeDeployment(jobs: jobs, replicas: 3, to: directory))
        let odd = try String(contentsOf: directory.appendingPathComponent("jobrun-odd-one.yaml"), encoding: .utf8)
        for expected in [
            "kind: CronJob", "name: jobrun-odd-one", "schedule: \"0 0 13 * FRI\"", "timeZone: \"Europe/Berlin\"", "concurrencyPolicy: Replace",
            "startingDeadlineSeconds: 300", "backoffLimit: 0", "activeDeadlineSeconds: 150",
            "args: [\"run\", \"Odd_One\", \"--scheduled\", \"--root\", \"/var/lib/jobrun\", \"--jobs-dir\", \"/etc/jobrun/jobs\", \"--log-file\", \"-\", \"--log-format\", \"json\", \"--pushgateway\", \"http://pushgateway.monitoring:9091\"]",
            "secretName: \"jobrun-cluster\"", "subPath: cluster.yaml", "memory: \"1Gi\"", "defaultMode: 288", "fsGroup: 65532",
            "- action: Ignore", "values: [75]",
        ] {
            XCTAssertTrue(odd.contains(expected), "missing \(expected) in:\n\(odd)")
        }
        XCTAssertFalse(odd.contains("suspend:"), odd)
        let dormant = try String(contentsOf: directory.appendingPathComponent("jobrun-dormant.yaml"), encoding: .utf8)
        XCTAssertTrue(dormant.contains("\n  suspend: true\n"), "enabled: false is a suspended CronJob:\n\(dormant)")
        let deployment = try String(contentsOf: directory.appendingPathComponent("jobrun-scheduler.yaml"), encoding: .utf8)
        for expected in [
            "kind: Deployment", "replicas: 3", "path: /healthz", "path: /readyz", "terminationGracePeriodSeconds: 390",
            "\"--listen\", \":9464\"", "containerPort: 9464",
        ] {
            XCTAssertTrue(deployment.contains(expected), "missing \(expected) in:\n\(deployment)")
        }
        guard let validate = TestPaths.which("kubernetes-validate") else {
            return XCTFail("kubernetes-validate is not installed: run scripts/install-deps.sh")
        }
        let (status, out, err) = try TestPaths.run(validate, ["--strict", "--quiet"] + files.map(\.path))
        XCTAssertEqual(status, 0, "kubernetes-validate: \(out) \(err)")
    }

    func testResourceNamesAreDNSLabels() {
        XCTAssertEqual(KubernetesCronJobWriter.resourceName("Sync_History.2"), "jobrun-sync-history-2")
        XCTAssertLessThanOrEqual(KubernetesCronJobWriter.resourceName(String(repeating: "x", count: 80)).count, 52)
    }
}
