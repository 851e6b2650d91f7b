import ArgumentParser
import Foundation
import Jobs

/// `jobrun units --out DIR`: systemd service and timer units for the scheduled jobs, or with
/// `--kubernetes` a CronJob manifest per scheduled job.
struct UnitsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "units",
        abstract: "Write a hardened systemd .service and .timer per scheduled job, and print how to install them (or Kubernetes manifests).",
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
              jobrun units --out ./k8s --kubernetes --pushgateway http://pushgateway.monitoring:9091
              jobrun units --out ./k8s --kubernetes --replicas 2   # a Deployment of schedulers instead

            The systemd units name --root and an absolute --jobs-dir (else /var/lib/jobrun and \
            /etc/jobrun/jobs, or --unit-root and --unit-jobs-dir). A timer this command wrote \
            before for a job that has none now (enabled: false) is removed, and the printed \
            commands disable its installed copy. The Kubernetes manifests use the pod's own paths \
            and user: the systemd options are refused with --kubernetes, as the Kubernetes ones \
            are without it. See docs/scale-out.md (Kubernetes).
            """)

    @OptionGroup var options: GlobalOptions
    @Option(help: "Directory to write the units to.") var out: String
    @Option(help: "Absolute path of the jobrun binary in the units (default: /usr/local/bin/jobrun).") var binary: String?
    @Option(name: .customLong("unit-root"), help: "Data root written into the units (default: --root when given, else /var/lib/jobrun).")
    var unitRoot: String?
    @Option(
        name: .customLong("unit-jobs-dir"),
        help: "Jobs directory written into the units (default: --jobs-dir when it is an absolute path, else /etc/jobrun/jobs).")
    var unitJobsDir: String?
    @Option(help: "User the services run as (never root; default: jobrun).") var user: String?
    @Flag(name: .customLong("dynamic-user"), help: "DynamicUser=yes instead of --user (the data root must be under /var/lib).") var dynamicUser = false
    @Flag(help: "One templated jobrun@.service for all jobs instead of a service per job.") var template = false
    @Flag(help: "Kubernetes CronJobs (batch/v1) instead of systemd units; the stores must be shared (cluster.yaml).") var kubernetes = false
    @Option(help: "Container image of the CronJobs (--kubernetes; default: jobrun:latest).") var image: String?
    @Option(help: "Namespace of the CronJobs (--kubernetes).") var namespace: String?
    @Option(help: "Pushgateway the CronJobs push their metrics to (--kubernetes; no credentials in the URL).") var pushgateway: String?
    @Option(help: "A Deployment of this many `jobrun schedule` replicas instead of the CronJobs (--kubernetes).") var replicas: Int?

    func run() throws {
        // Every option is used or refused: none is accepted and then ignored.
        let systemdOnly: [(String, Bool)] = [
            ("--root", options.root != nil), ("--unit-root", unitRoot != nil), ("--unit-jobs-dir", unitJobsDir != nil), ("--binary", binary != nil),
            ("--user", user != nil), ("--dynamic-user", dynamicUser), ("--template", template),
        ]
        let kubernetesOnly: [(String, Bool)] = [
            ("--image", image != nil), ("--namespace", namespace != nil), ("--pushgateway", pushgateway != nil), ("--replicas", replicas != nil),
        ]
        if kubernetes, let given = systemdOnly.first(where: \.1) {
            throw fail(.usage, "\(given.0) is for systemd units: the CronJobs use the pod's own paths and user (drop \(given.0) with --kubernetes)")
        }
        if !kubernetes, let given = kubernetesOnly.first(where: \.1) {
            throw fail(.usage, "\(given.0) is for Kubernetes manifests (add --kubernetes, or drop \(given.0))")
        }
        let catalog = try options.catalog()
        if !catalog.errors.isEmpty {
            throw fail(.config, catalog.errors.map(\.description).joined(separator: "\n"))
        }
        if kubernetes {
            if let pushgateway, let problem = Pushgateway.problem(pushgateway) { throw fail(.usage, "--pushgateway \(problem)") }
            if let replicas, replicas < 1 { throw fail(.usage, "--replicas must be at least 1") }
            let writer = KubernetesCronJobWriter(
                options: .init(image: image ?? "jobrun:latest", namespace: namespace, pushgateway: pushgateway.flatMap(Pushgateway.init)))
            let directory = URL(fileURLWithPath: out)
            let urls =
                try replicas.map { [try writer.writeDeployment(jobs: catalog.jobs, replicas: $0, to: directory)] }
                ?? writer.write(jobs: catalog.jobs, to: directory)
            if options.json {
                printJSON(.object(["version": .int(1), "files": .array(urls.map { .string($0.path) })]))
            } else {
                urls.forEach { print($0.path) }
            }
            return
        }
        let user = user ?? "jobrun"
        if user == "root" { throw fail(.usage, "--user root: jobrun's services never run as root (give a user, or --dynamic-user)") }
        let root = unitRoot ?? options.root ?? "/var/lib/jobrun"
        guard root.hasPrefix("/") else { throw fail(.usage, "the data root in the units must be an absolute path, not \(root) (systemd needs one)") }
        let jobsDirectory = unitJobsDir ?? options.jobsDir.flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/etc/jobrun/jobs"
        guard jobsDirectory.hasPrefix("/") else { throw fail(.usage, "--unit-jobs-dir must be an absolute path, not \(jobsDirectory)") }
        if dynamicUser, !root.hasPrefix("/var/lib/") {
            throw fail(.usage, "--dynamic-user needs the data root under /var/lib (systemd's StateDirectory=), not \(root)")
        }
        let writer = UnitWriter(
            options: .init(
                binary: binary ?? "/usr/local/bin/jobrun", root: root, jobsDirectory: jobsDirectory, user: user, dynamicUser: dynamicUser,
                template: template))
        let directory = URL(fileURLWithPath: out)
        let units = writer.units(for: catalog.jobs) + (template ? [] : writer.supportUnits())
        var urls = try writer.write(jobs: catalog.jobs, to: directory)
        if !template { urls += try UnitWriter.write(units: writer.supportUnits(), to: directory) }
        let removed = try writer.removeStaleTimers(in: directory, keeping: units)
        if options.json {
            printJSON(
                .object([
                    "version": .int(1), "files": .array(urls.map { .string($0.path) }),
                    "removed": .array(removed.map { .string(directory.appendingPathComponent($0).path) }),
                ]))
            return
        }
        urls.forEach { print($0.path) }
        removed.forEach { print("removed \(directory.appendingPathComponent($0).path) (its job has no timer now)") }
        print("\nInstall and start them:")
        for command in writer.installCommands(for: units, directory: directory.path, removedTimers: removed) { print("  \(command)") }
    }
}
