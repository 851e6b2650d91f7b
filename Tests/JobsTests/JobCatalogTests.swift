import Foundation
import XCTest

@testable import Jobs

final class JobCatalogTests: XCTestCase {
    func testShippedJobFilesValidate() throws {
        let directory = TestPaths.repositoryRoot.appendingPathComponent("jobs")
        let catalog = JobCatalog.load(directory: directory)
        XCTAssertEqual(catalog.errors, [], catalog.errors.map(\.description).joined(separator: "\n"))
        XCTAssertEqual(Set(catalog.jobs.map(\.kind)), Set(JobKindRegistry.shipped.names), "one shipped job per kind")
        let schedules = Dictionary(uniqueKeysWithValues: catalog.jobs.map { ($0.kind, $0.schedule?.expression ?? "") })
        XCTAssertEqual(schedules[SyncHistoryJob.name], "@hourly")
        XCTAssertEqual(schedules[PrefetchChatMediaJob.name], "*/15 * * * *")
        XCTAssertEqual(schedules[UploadQueueJob.name], "*/5 * * * *")
        XCTAssertEqual(schedules[TimeBasedCleanupJob.name], "30 3 * * *")
        XCTAssertEqual(try catalog.resolve("sync-history").kind, SyncHistoryJob.name)
        let byPath = try catalog.resolve(directory.appendingPathComponent("upload-queue.yaml").path)
        XCTAssertEqual(byPath.name, "upload-queue")
    }

    func testDuplicateNamesAndResolveErrors() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let body = "kind: upload-queue\nschedule: \"@hourly\"\n"
        try ("name: same\n" + body).write(to: directory.appendingPathComponent("a.yaml"), atomically: true, encoding: .utf8)
        try ("name: same\n" + body).write(to: directory.appendingPathComponent("b.yml"), atomically: true, encoding: .utf8)
        try ("name: broken\nkind: nope\n").write(to: directory.appendingPathComponent("broken.yaml"), atomically: true, encoding: .utf8)
        try ("name: ignored\n").write(to: directory.appendingPathComponent("notes.txt"), atomically: true, encoding: .utf8)
        let catalog = JobCatalog.load(directory: directory)
        XCTAssertEqual(catalog.jobs.map(\.name), ["same"])
        let messages = catalog.errors.map(\.description)
        XCTAssertTrue(
            messages.contains {
                $0.hasSuffix(
                    "b.yml:1:7: duplicate job name 'same' (also defined at \(directory.path)/a.yaml:1:7) (expected job names unique across the jobs directory)")
            }, "\(messages)")
        XCTAssertTrue(messages.contains { $0.contains("broken.yaml:2:7: unknown job kind 'nope'") }, "\(messages)")
        XCTAssertThrowsError(try JobCatalog.loadStrict(directory: directory))
        // Hidden files are not job files; a path that is no directory is an error at its line 1.
        try ("name: hidden\n" + body).write(to: directory.appendingPathComponent(".hidden.yaml"), atomically: true, encoding: .utf8)
        XCTAssertEqual(JobCatalog.load(directory: directory).jobs.map(\.name), ["same"])
        // A named pipe is refused at once (reading it would wait for a writer forever).
        let pipe = directory.appendingPathComponent("pipe.yaml").path
        XCTAssertEqual(mkfifo(pipe, 0o600), 0)
        XCTAssertEqual(
            JobCatalog.load(directory: directory).errors.map(\.description).filter { $0.contains("pipe.yaml") },
            ["\(pipe):1:1: cannot read job file: it is not a regular file (expected a readable file)"])
        unlink(pipe)
        let file = directory.appendingPathComponent("a.yaml")
        XCTAssertEqual(
            JobCatalog.load(directory: file).errors.map(\.description),
            ["\(file.path):1:1: cannot read jobs directory: Not a directory (ENOTDIR) (expected a directory of *.yaml job files)"])

        // `validate <files…>`: paths shown as given, a missing file is an error too.
        let listed = JobCatalog.load(files: [directory.appendingPathComponent("a.yaml").path, "/nonexistent.yaml"])
        XCTAssertEqual(listed.jobs.map(\.name), ["same"])
        XCTAssertEqual(listed.errors.map { "\($0.file):\($0.line):\($0.column)" }, ["/nonexistent.yaml:1:1"])

        do { _ = try catalog.resolve("missing"); XCTFail("resolved") } catch {
            XCTAssertEqual(error.exitCode, .usage)
            XCTAssertTrue(error.description.contains("known jobs: same"))
        }
        do { _ = try catalog.resolve("broken"); XCTFail("resolved") } catch {
            XCTAssertEqual(error.exitCode, .config)
        }
        do { _ = try catalog.resolve(directory.appendingPathComponent("broken.yaml").path); XCTFail("resolved") } catch {
            XCTAssertEqual(error.exitCode, .config)
        }
        do { _ = try catalog.resolve("/nonexistent/job.yaml"); XCTFail("resolved") } catch {
            XCTAssertEqual(error.exitCode, .usage)
        }
    }

    func testAJobIsReadFromItsOwnFileAndThatFileWinsACollision() throws {
        let directory = try TestPaths.makeTempDirectory()
        let body = "kind: upload-queue\nschedule: \"@hourly\"\n"
        func write(_ file: String, _ text: String) throws {
            try text.write(to: directory.appendingPathComponent(file), atomically: true, encoding: .utf8)
        }
        // `a.yaml` sorts first but `same.yaml` is named after the job: both lookups take it.
        try write("a.yaml", "name: same\n" + body)
        try write("same.yaml", "name: same\ndescription: own file\n" + body)
        try write("other.yml", "name: other\n" + body)
        try write("broken.yaml", "name: broken\nkind: nope\n")
        try write("elsewhere.yaml", "name: moved\n" + body)

        let own = try XCTUnwrap(JobCatalog.ownFile(of: "same", in: directory))
        XCTAssertEqual(own.source, directory.appendingPathComponent("same.yaml").path)
        XCTAssertEqual(own.description, "own file")
        let catalog = JobCatalog.load(directory: directory)
        XCTAssertEqual(catalog.job(named: "same")?.source, own.source)
        XCTAssertEqual(
            catalog.errors.map(\.description).filter { $0.contains("duplicate") },
            [
                "\(directory.path)/a.yaml:1:7: duplicate job name 'same' (also defined at \(directory.path)/same.yaml:1:7) (expected job names unique across the jobs directory)"
            ])
        XCTAssertEqual(JobCatalog.ownFile(of: "other", in: directory)?.name, "other", ".yml too")

        // No own file, an invalid one, one naming another job, or a name that is no file name:
        // nil, and the caller reads the whole directory.
        XCTAssertNil(JobCatalog.ownFile(of: "moved", in: directory))
        XCTAssertNil(JobCatalog.ownFile(of: "broken", in: directory))
        try write("renamed.yaml", "name: moved-again\n" + body)
        XCTAssertNil(JobCatalog.ownFile(of: "renamed", in: directory))
        try write(".hidden.yaml", "name: .hidden\n" + body)
        XCTAssertNil(JobCatalog.ownFile(of: ".hidden", in: directory))
        XCTAssertNil(JobCatalog.ownFile(of: "", in: directory))
        XCTAssertEqual(try catalog.resolve("moved").source, directory.appendingPathComponent("elsewhere.yaml").path)
    }

    func testEveryKindDeclaresAWellFormedSchema() {
        for kind in JobKindRegistry.shipped.kinds {
            let schema = SectionSchema(kind)
            XCTAssertEqual(schema.name, kind.name)
            XCTAssertEqual(Set(schema.params.map { $0.name }).count, schema.params.count, "\(kind.name): duplicate param")
            for spec in schema.params {
                XCTAssertFalse(spec.doc.isEmpty, "\(kind).\(spec.name) needs a doc line")
                XCTAssertFalse(spec.required && spec.defaultValue != nil, "\(kind).\(spec.name): required with a default")
            }
            // Defaults alone validate, except for required params (and a kind's own cross-parameter
            // rules, checked once the parameters themselves are valid).
            let (params, errors) = schema.validate(nil, fallback: SourcePosition(file: "x", line: 1, column: 1))
            let required = schema.params.filter { $0.required }.count
            XCTAssertEqual(errors.filter { $0.message.hasPrefix("missing required") }.count, required, "\(kind.name): \(errors)")
            if required == 0 { XCTAssertEqual(errors, type(of: kind).check(params), kind.name) }
            for spec in schema.params where spec.defaultValue != nil {
                XCTAssertNotNil(params.values[spec.name], "\(kind.name).\(spec.name)")
            }
        }
    }
}
