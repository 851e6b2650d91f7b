import CloudCrypto
import Foundation
import NIOCore
import Synchronization
import XCTest

@testable import CloudServer

/// The upload hashing paces part answers: an answer waits while the hashing is more than
/// `UploadHasher.maxLagParts` behind its part, never when waiting cannot help (a missing part
/// before it, a hashing that stopped), so no answer is held for good.
final class UploadPacingTests: XCTestCase {
    private static let partSize = 64 << 10
    private var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "upload-pacing-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: directory) }

    /// An upload whose `parts` are recorded with the hasher without starting its worker, so
    /// nothing is hashed until someone waits. Parts in `written` also have their bytes in the
    /// upload's file; the others cannot be read back.
    private func upload(parts: [Int], written: Set<Int>) throws -> (UploadHasher, Data) {
        let file = UploadPartsFile(path: directory + "/parts")
        let hasher = UploadHasher(file: file)
        let bytes = SecureRandom.bytes(Self.partSize * ((parts.max() ?? 0) + 1))
        for part in parts {
            if written.contains(part) {
                let slice = bytes.subdata(in: part * Self.partSize..<(part + 1) * Self.partSize)
                XCTAssertEqual(
                    try file.write(part: part, chunks: [ByteBuffer(bytes: slice)], size: Self.partSize, hint: Self.partSize), .written)
            }
            hasher.stored(part: part, generation: part + 1, startWorker: false)
        }
        return (hasher, bytes)
    }

    /// Runs `pace` and fails (instead of hanging the suite) if it has not returned in 20 s. The
    /// call runs in a task of its own: a structured child that never returns would keep the
    /// test waiting for it.
    private func paced(_ hasher: UploadHasher, part: Int) async throws {
        let returned = Returned()
        Task {
            await hasher.pace(part: part)
            returned.flag.store(true, ordering: .releasing)
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while !returned.flag.load(ordering: .acquiring), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        XCTAssertTrue(returned.flag.load(ordering: .acquiring), "the answer for part \(part) was held")
    }

    func testAnAnswerFarAheadOfTheHashingWaitsUntilItIsWithinTheLimit() async throws {
        let count = UploadHasher.maxLagParts + 8
        let (hasher, bytes) = try upload(parts: Array(0..<count), written: Set(0..<count))
        // Within the limit: answered at once, nothing hashed for it.
        try await paced(hasher, part: UploadHasher.maxLagParts - 1)
        XCTAssertEqual(hasher.hashedParts, 0)
        // Beyond it: answered only once the hashing has come within the limit.
        try await paced(hasher, part: count - 1)
        XCTAssertGreaterThan(hasher.hashedParts, count - 1 - UploadHasher.maxLagParts)
        // The pacing hashed the parts in order: the digest is the file's.
        let digest = await hasher.digest(parts: count)
        XCTAssertEqual(digest, SHA256.hash(bytes).hexString)
    }

    func testAnAnswerBeyondAMissingPartIsNotHeld() async throws {
        // Part 0 never arrived: the hashing cannot start, so waiting could not help.
        let count = UploadHasher.maxLagParts + 8
        let (hasher, _) = try upload(parts: Array(1..<count), written: Set(1..<count))
        try await paced(hasher, part: count - 1)
        XCTAssertEqual(hasher.hashedParts, 0)
        let digest = await hasher.digest(parts: count)
        XCTAssertNil(digest)
    }

    func testAnAnswerIsReleasedWhenTheHashingStops() async throws {
        // Part 0 is recorded but cannot be read back: the worker that starts for the waiting
        // answer stops at once (blocked), and must release it.
        let count = UploadHasher.maxLagParts + 8
        let (hasher, _) = try upload(parts: Array(0..<count), written: Set(1..<count))
        try await paced(hasher, part: count - 1)
        XCTAssertEqual(hasher.hashedParts, 0)
    }

    func testAnAnswerIsReleasedWhenTheWorkerStopsAtAFinishedDigest() async throws {
        // A digest of the first parts is finished (its parts' hash restarts from zero); a part
        // far beyond them arrives. The worker started for its answer has nothing to do for
        // anyone and stops: it must release the answer rather than leave it waiting for good.
        let count = UploadHasher.maxLagParts + 8
        let (hasher, bytes) = try upload(parts: Array(0..<count), written: Set(0..<count))
        let digest = await hasher.digest(parts: count)
        XCTAssertEqual(digest, SHA256.hash(bytes).hexString)
        let late = count + UploadHasher.maxLagParts
        hasher.stored(part: late, generation: late + 1, startWorker: false)
        try await paced(hasher, part: late)
    }

    func testAnAnswerForACancelledUploadIsNotHeld() async throws {
        let count = UploadHasher.maxLagParts + 8
        let (hasher, _) = try upload(parts: Array(0..<count), written: Set(0..<count))
        hasher.cancel()
        try await paced(hasher, part: count - 1)
        XCTAssertEqual(hasher.hashedParts, 0)
    }
}

private final class Returned: Sendable {
    let flag = Atomic(false)
}
