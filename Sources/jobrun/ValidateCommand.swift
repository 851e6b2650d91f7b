import ArgumentParser
import Foundation
import Jobs

/// `jobrun validate [files…]`: checks job files; every error names file:line:column.
struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate", abstract: "Validate job files (default: every file in --jobs-dir). Exit 78 on any error.",
        discussion: """
            Every error names file:line:column. A missing jobs directory is exit 66 and one without \
            job files 78, so a CI gate never passes on a mistyped path.

            Examples:
              jobrun validate --jobs-dir /etc/jobrun/jobs
              jobrun validate jobs/sync-history.yaml --json
            """)

    @OptionGroup var options: GlobalOptions
    @Argument(help: "Job files to check.") var files: [String] = []

    func run() throws {
        var errors: [JobFileError] = []
        var valid: [JobFile] = []
        if files.isEmpty {
            let catalog = try options.catalog()
            errors = catalog.errors
            valid = catalog.jobs
        } else {
            for file in files {
                do { valid.append(try JobFile.load(contentsOf: URL(fileURLWithPath: file), displayPath: file)) } catch {
                    errors += error.errors
                }
            }
        }
        if options.json {
            printJSON(
                .object([
                    "version": .int(1),
                    "valid": .array(valid.map { .string($0.name) }),
                    "errors": .array(
                        errors.map {
                            .object([
                                "file": .string($0.file), "line": .int(Int64($0.line)), "column": .int(Int64($0.column)), "message": .string($0.description),
                            ])
                        }),
                ]))
        } else {
            for job in valid { print("ok: \(job.source): \(job.name) (\(job.kind))") }
            for error in errors { FileHandle.standardError.write(Data("\(error)\n".utf8)) }
        }
        if !errors.isEmpty { throw ExitCode(JobExitCode.config.rawValue) }
    }
}
