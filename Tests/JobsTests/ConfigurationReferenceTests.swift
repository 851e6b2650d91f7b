import Foundation
import XCTest

@testable import Jobs

/// docs/configuration.md is the sections' own declarations, printed.
final class ConfigurationReferenceTests: XCTestCase {
    func testConfigurationDocumentCarriesTheGeneratedTables() throws {
        let url = TestPaths.repositoryRoot.appendingPathComponent("docs/configuration.md")
        let document = try String(contentsOf: url, encoding: .utf8)
        let expected = try XCTUnwrap(
            ConfigurationReference.replacingGenerated(in: document), "docs/configuration.md lacks the generated-configuration markers")
        if ProcessInfo.processInfo.environment["JOBS_REGENERATE_DOCS"] == "1", expected != document {
            try expected.write(to: url, atomically: true, encoding: .utf8)
            return
        }
        XCTAssertEqual(document, expected, "docs/configuration.md is out of date: JOBS_REGENERATE_DOCS=1 swift test --filter ConfigurationReferenceTests")
    }

    func testEveryFileSectionKeyAndVariableIsInTheReference() throws {
        let text = ConfigurationReference.markdown()
        for file in ConfigurationReference.files {
            XCTAssertTrue(text.contains("## \(file.title)"), file.title)
            for section in file.sections {
                if !section.path.isEmpty { XCTAssertTrue(text.contains("### `\(section.path)`"), section.path) }
                for spec in section.parameters.map(\.spec) {
                    XCTAssertTrue(text.contains("| `\(spec.name)` |"), "\(section.path).\(spec.name)")
                    XCTAssertTrue(text.contains(spec.doc), spec.doc)
                    if let variable = spec.environment { XCTAssertTrue(text.contains("`\(variable)`"), variable) }
                }
            }
        }
        // Every JOBRUN_ variable the configuration reads is declared on a Param, so it is listed.
        for variable in [
            "JOBRUN_POSTGRES_URL", "JOBRUN_POSTGRES_PASSWORD_FILE", "JOBRUN_POSTGRES_TLS_MODE", "JOBRUN_POSTGRES_CA_FILE",
            "JOBRUN_POSTGRES_SCHEMA_PREFIX", "JOBRUN_S3_ENDPOINT", "JOBRUN_S3_BUCKET", "JOBRUN_S3_REGION", "JOBRUN_S3_ADDRESSING",
            "JOBRUN_S3_CREDENTIALS_FILE", "JOBRUN_S3_PREFIX", "JOBRUN_ON_FAILURE", "JOBRUN_HEARTBEAT",
        ] {
            XCTAssertTrue(text.contains("`\(variable)`"), variable)
        }
        XCTAssertTrue(text.contains("| `lease` | duration | 30s | 2s – 1h |"), text)
        XCTAssertTrue(text.contains("| `partSize` | size | 8MiB | 5MiB – 5GiB |"), text)
    }

    func testTheReadmeAndArchitectureLinkTheReference() throws {
        for name in ["README.md", "docs/architecture.md"] {
            let text = try String(contentsOf: TestPaths.repositoryRoot.appendingPathComponent(name), encoding: .utf8)
            XCTAssertTrue(text.contains("configuration.md"), name)
        }
    }
}
