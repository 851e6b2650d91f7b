import ArgumentParser
import Foundation
import Jobs

/// `jobrun units --out DIR`: systemd service and timer units for the scheduled jobs, or with
/// `--kubernetes` a CronJob manifest per scheduled job.
struct UnitsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "units", abstract: "Write a hardened systemd .service and .timer per scheduled job, and print how to install them.",
        discussion: """
            Services run as a non-root user (--user, default jobrun; or --dynamic-user) in a \
            sandbox systemd-analyze security rates OK, with the data root as their only writable \
            path (a StateDirectory= under /var/lib). A job with enabled: false gets no timer. Each \
            service names jobrun-failure@<job>.service in OnFailure=, which alerts through the \
            job's onFailure hook and heartbeat when jobrun itself could not (killed, timed out by \
            systemd).

            Examples:
              jobrun units --out ./units --jobs-dir /etc/jobrun/jobs
              jobrun units --out ./units --template          # one jobrun@.service for every job
            """)

    @OptionGroup var options: GlobalOptions
    @Option(help: "Directory to write the units to.") var out: String
    @Option(help: "Absolute path of the jobrun binary in the units.") var binary = "/usr/local/bin/jobrun"
    @Option(name: .customLong("unit-root"), help: "Data root written into the units.") var unitRoot = "/var/lib/jobrun"
    @Option(name: .customLong("unit-jobs-dir"), help: "Jobs directory written into the units.") var unitJobsDir = "/etc/jobrun/jobs"
    @Option(help: "User the services run as (never root).") var user = "jobrun"
    @Flag(name: .customLong("dynamic-user"), help: "DynamicUser=yes instead of --user (the data root must be under /var/lib).") var dynamicUser = false
    @Flag(help: "One templated jobrun@.service for all jobs instead of a service per job.") var template = false
    @Flag(help: "Kubernetes CronJobs (batch/v1) instead of systemd units; the stores must be shared (cluster.yaml).") var kubernetes = false
    @Option(help: "Container image of the CronJobs (--kubernetes).") var image = "jobrun:latest"
    @Option(help: "Namespace of the CronJobs (--kubernetes).") var namespace: String?

    func run() throws {
        let catalog = try options.settings.catalog()
        if !catalog.errors.isEmpty {
            throw fail(.config, catalog.errors.map(\.description).joined(separator: "\n"))
        }
        if kubernetes {
            let writer = KubernetesCronJobWriter(options: .init(image: image, namespace: namespace))
            let urls = try writer.write(jobs: catalog.jobs, to: URL(fileURLWithPath: out))
            if options.json {
                printJSON(.object(["version": .int(1), "files": .array(urls.map { .string($0.path) })]))
            } else {
                urls.forEach { print($0.path) }
            }
            return
        }
        if user == "root" { throw fail(.usage, "--user root: jobrun's services never run as root (give a user, or --dynamic-user)") }
        if dynamicUser, !unitRoot.hasPrefix("/var/lib/") {
            throw fail(.usage, "--dynamic-user needs the data root under /var/lib (systemd's StateDirectory=), not \(unitRoot)")
        }
        let writer = UnitWriter(
            options: .init(binary: binary, root: unitRoot, jobsDirectory: unitJobsDir, user: user, dynamicUser: dynamicUser, template: template))
        let directory = URL(fileURLWithPath: out)
        var urls = try writer.write(jobs: catalog.jobs, to: directory)
        if !template { urls += try writer.write(units: writer.supportUnits(), to: directory) }
        if options.json {
            printJSON(.object(["version": .int(1), "files": .array(urls.map { .string($0.path) })]))
            return
        }
        urls.forEach { print($0.path) }
        print("\nInstall and start them:")
        for command in writer.installCommands(for: writer.units(for: catalog.jobs), directory: directory.path) { print("  \(command)") }
    }
}
