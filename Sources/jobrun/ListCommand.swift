import ArgumentParser
import Foundation
import Jobs

/// `jobrun list`: the jobs in --jobs-dir with their kind, schedule and next fire time.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List jobs, their schedules and next run times (or, with --kinds, the job kinds and their parameters).",
        discussion: """
            Examples:
              jobrun list --jobs-dir /etc/jobrun/jobs
              jobrun list --kinds
              jobrun list --json | jq -r '.jobs[].name'
            """)

    @OptionGroup var options: GlobalOptions
    @Flag(help: "List the job kinds this build runs, with every parameter's type, default, range and meaning.") var kinds = false
    @Flag(help: "With --kinds: print the Markdown reference of docs/job-files.md.") var markdown = false

    func run() throws {
        if kinds {
            print(markdown ? KindReference.markdown() : KindReference.text(), terminator: "")
            return
        }
        let catalog = try options.catalog()
        let now = Date()
        let formatter = ISO8601DateFormatter()
        if options.json {
            printJSON(
                .object([
                    "version": .int(1),
                    "jobs": .array(
                        catalog.jobs.map { job in
                            .object([
                                "name": .string(job.name), "kind": .string(job.kind), "enabled": .bool(job.enabled),
                                "description": job.description.map { .string($0) } ?? .null,
                                "schedule": job.schedule.map { .string($0.description) } ?? .null,
                                "next": job.nextFire(after: now).map { .string(formatter.string(from: $0)) } ?? .null,
                                "file": .string(job.source),
                            ])
                        }),
                ]))
        } else {
            for job in catalog.jobs {
                let next = job.nextFire(after: now).map { formatter.string(from: $0) } ?? "-"
                print(
                    "\(job.name.padding(toLength: 24, withPad: " ", startingAt: 0)) \(job.kind.padding(toLength: 22, withPad: " ", startingAt: 0)) \((job.schedule?.description ?? "manual").padding(toLength: 16, withPad: " ", startingAt: 0)) next \(next)\(job.enabled ? "" : " (disabled)")"
                )
            }
        }
        for error in catalog.errors { FileHandle.standardError.write(Data("\(error)\n".utf8)) }
        if !catalog.errors.isEmpty { throw ExitCode(JobExitCode.config.rawValue) }
    }
}
