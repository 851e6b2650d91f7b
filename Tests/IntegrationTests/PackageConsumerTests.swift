import Foundation
import TestSupport
import XCTest

/// The libraries the package advertises can be used by another package as a versioned
/// dependency: SwiftPM refuses such a dependency when any of its targets carries `unsafeFlags`,
/// and this is the check that it does not. A copy of this package is tagged `99.0.0` in a git
/// repository of its own; a scratch package names it by a `file://` URL and that version,
/// depends on the `Postbox` product, and its executable writes a peer and a message to a new
/// store, closes it, opens it again and prints what it reads back.
final class PackageConsumerTests: XCTestCase {
    /// The package's root: three levels above this file (`Tests/IntegrationTests/…`).
    private static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func testScratchPackageResolvesBuildsAndRunsAPostboxRoundTrip() throws {
        let swift = try XCTUnwrap(SystemCommand.onPath("swift"), "the swift toolchain is not on PATH")
        let git = try XCTUnwrap(SystemCommand.onPath("git"), "git is not installed")
        let dir = TemporaryDirectory(prefix: "jobrun-consumer")

        // This package as a tagged repository: its manifest and sources (the working tree, not
        // the last commit, so that what is tested is what is being built), without build output.
        let dependency = dir.file("jobrun")
        try FileManager.default.createDirectory(atPath: dependency, withIntermediateDirectories: true)
        for entry in ["Package.swift", "Sources", "Tests"] {
            try FileManager.default.copyItem(
                atPath: Self.packageRoot.appendingPathComponent(entry).path, toPath: dependency + "/" + entry)
        }
        let gitIn = [git, "-C", dependency, "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
        try SystemCommand.run(gitIn + ["init", "-q"])
        try SystemCommand.run(gitIn + ["add", "-A"])
        try SystemCommand.run(gitIn + ["commit", "-q", "-m", "jobrun as a dependency"])
        try SystemCommand.run(gitIn + ["tag", "99.0.0"])

        let consumer = dir.file("consumer")
        try FileManager.default.createDirectory(atPath: consumer + "/Sources/consumer", withIntermediateDirectories: true)
        try """
        // swift-tools-version: 6.1
        import PackageDescription

        let package = Package(
            name: "consumer",
            dependencies: [.package(url: "file://\(dependency)", from: "99.0.0")],
            targets: [.executableTarget(name: "consumer", dependencies: [.product(name: "Postbox", package: "jobrun")])]
        )
        """.write(toFile: consumer + "/Package.swift", atomically: true, encoding: .utf8)
        try """
        import Postbox

        let path = CommandLine.arguments[1]
        let peer = PeerId(42)
        let message = MessageId(peerId: peer, id: 7)
        do {
            let postbox = try Postbox(path: path)
            try await postbox.transaction { tx in
                try tx.peers.set(Peer(id: peer, category: .channel, title: "consumer"))
                try tx.messages.add([Message(id: message, timestamp: 1_700_000_000, text: "round trip")])
            }
        }
        let reopened = try Postbox(path: path)
        let (title, text) = try await reopened.read { tx in (try tx.peers.get(peer)?.title, try tx.messages.get(message)?.text) }
        print("\\(title ?? "no peer") \\(text ?? "no message")")
        """.write(toFile: consumer + "/Sources/consumer/main.swift", atomically: true, encoding: .utf8)

        // A scratch directory of its own, so that nothing is shared with the build running
        // these tests; the repositories of the dependencies' dependencies come from SwiftPM's
        // shared cache or the machine's mirrors, as for any package.
        let run = try ChildProcess(
            swift, ["run", "--package-path", consumer, "--scratch-path", dir.file("build"), "consumer", dir.file("store/db.sqlite")])
        let status = run.wait(timeout: 1800)
        XCTAssertEqual(status, 0, "swift run failed:\n\(run.stderr)\n\(run.stdout)")
        XCTAssertEqual(run.stdout.split(separator: "\n").last, "consumer round trip", run.stdout + run.stderr)
        XCTAssertTrue(
            FileManager.default.fileExists(atPath: dir.file("build/checkouts/jobrun/Package.swift")),
            "the dependency was checked out from its tag, not used in place")
    }
}
