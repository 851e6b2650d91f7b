import ArgumentParser
import Foundation
import Jobs

/// `jobrun list`: the jobs in --jobs-dir with their kind, schedule and next fire time.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List jobs, their schedules and next run times.")

    @OptionGroup var options: GlobalOptions

    func run() throws {
        let catalog = options.catalog()
        let now = Date()
        let formatter = ISO8601DateFormatter()
        if options.json {
            printJSON(.array(catalog.jobs.map { job in
                .object(["name": .string(job.name), "kind": .string(job.kind.rawValue), "enabled": .bool(job.enabled),
                         "schedule": job.schedule.map { .string($0.description) } ?? .null,
                         "next": job.nextFire(after: now).map { .string(formatter.string(from: $0)) } ?? .null,
                         "file": .string(job.source)])
            }))
        } else {
            for job in catalog.jobs {
                let next = job.nextFire(after: now).map { formatter.string(from: $0) } ?? "-"
                print("\(job.name.padding(toLength: 24, withPad: " ", startingAt: 0)) \(job.kind.rawValue.padding(toLength: 22, withPad: " ", startingAt: 0)) \((job.schedule?.description ?? "manual").padding(toLength: 16, withPad: " ", startingAt: 0)) next \(next)\(job.enabled ? "" : " (disabled)")")
            }
        }
        for error in catalog.errors { FileHandle.standardError.write(Data("\(error)\n".utf8)) }
        if !catalog.errors.isEmpty { throw ExitCode(JobExitCode.config.rawValue) }
    }
}
