import XCTest

@testable import Jobs

/// `jobrun demo` runs every shipped kind on the job file its `KindDemo` declares: each of those
/// files must be a valid job file of its kind, so the demo never stops at a kind's validation.
/// (That the demo runs them all, in the registry's order, is `DemoIntegrationTests`.)
final class KindDemoTests: XCTestCase {
    func testEveryShippedKindsDemoJobFileIsValid() throws {
        for kind in JobKindRegistry.shipped.kinds {
            let text = kind.demo.jobFile(kind: kind.name)
            let job: JobFile
            do { job = try JobFile.parse(yaml: text, file: "\(kind.name).yaml") } catch {
                XCTFail("the demo's \(kind.name) job file is invalid: \(error)\n\(text)")
                continue
            }
            XCTAssertEqual(job.name, kind.name)
            XCTAssertEqual(job.kind, kind.name)
        }
    }

    func testJobFileCarriesTheParams() {
        let demo = KindDemo(params: ["maxSize: 8MiB", "immunity: 0s"])
        XCTAssertEqual(
            demo.jobFile(kind: "time-based-cleanup"),
            "name: time-based-cleanup\nkind: time-based-cleanup\ntimeout: 10m\nparams:\n  maxSize: 8MiB\n  immunity: 0s\n")
        XCTAssertEqual(KindDemo().jobFile(kind: "upload-queue"), "name: upload-queue\nkind: upload-queue\ntimeout: 10m\n")
    }
}
