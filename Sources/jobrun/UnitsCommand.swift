import ArgumentParser
import Foundation
import Jobs

/// `jobrun units --out DIR`: systemd service and timer units for the scheduled jobs, or with
/// `--kubernetes` a CronJob manifest per scheduled job.
struct UnitsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "units", abstract: "Write a systemd .service and .timer per scheduled job.")

    @OptionGroup var options: GlobalOptions
    @Option(help: "Directory to write the units to.") var out: String
    @Option(help: "Absolute path of the jobrun binary in the units.") var binary = "/usr/local/bin/jobrun"
    @Option(name: .customLong("unit-root"), help: "Data root written into the units.") var unitRoot = "/var/lib/jobrun"
    @Option(name: .customLong("unit-jobs-dir"), help: "Jobs directory written into the units.") var unitJobsDir = "/etc/jobrun/jobs"
    @Option(help: "User the services run as.") var user: String?
    @Flag(help: "One templated jobrun@.service for all jobs instead of a service per job.") var template = false
    @Flag(help: "Kubernetes CronJobs (batch/v1) instead of systemd units; the stores must be shared (cluster.yaml).") var kubernetes = false
    @Option(help: "Container image of the CronJobs (--kubernetes).") var image = "jobrun:latest"
    @Option(help: "Namespace of the CronJobs (--kubernetes).") var namespace: String?

    func run() throws {
        let catalog = options.catalog()
        if !catalog.errors.isEmpty {
            throw fail(.config, catalog.errors.map(\.description).joined(separator: "\n"))
        }
        if kubernetes {
            let writer = KubernetesCronJobWriter(options: .init(image: image, namespace: namespace))
            let urls = try writer.write(jobs: catalog.jobs, to: URL(fileURLWithPath: out))
            if options.json { printJSON(.array(urls.map { .string($0.path) })) } else { urls.forEach { print($0.path) } }
            return
        }
        let writer = UnitWriter(options: .init(binary: binary, root: unitRoot, jobsDirectory: unitJobsDir, user: user, template: template))
        let urls = try writer.write(jobs: catalog.jobs, to: URL(fileURLWithPath: out))
        if options.json { printJSON(.array(urls.map { .string($0.path) })) } else { urls.forEach { print($0.path) } }
    }
}
