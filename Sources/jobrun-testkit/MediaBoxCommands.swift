import Foundation
import MediaBox
import Postbox
import ServerFixtures

/// MediaBox child-process commands (crash and cross-process lock tests):
///
/// - `hold-resource-lock <mediaDir> <id> <seconds>`: open the resource for reading (shared
///   lock), print `locked`, sleep.
/// - `write-partial-slowly <mediaDir> <id> <size> <chunk> <delayMs>`: fetch the resource with a
///   fetcher that yields the test pattern one chunk at a time; prints `progress <offset>`.
/// - `store-loop <mediaDir> <count> <size>`: store `r0…` with the test pattern (synced
///   completion), printing `stored <i>` — for SIGKILL during completion.
/// - `cleanup <mediaDir> <sizeLimit> [batchSize]`: run TimeBasedCleanup to the size limit and
///   print the report as JSON.
/// - `open-media <mediaDir>`: open the MediaBox for writing (migrating a flat store into shards)
///   and print `opened` — for SIGKILL during the migration.
let mediaBoxCommands: [String: TestkitCommand] = [
    "open-media": openMedia,
    "hold-resource-lock": holdResourceLock,
    "write-partial-slowly": writePartialSlowly,
    "store-loop": storeLoop,
    "cleanup": cleanupCommand,
]

private func holdResourceLock(_ args: [String]) throws {
    guard args.count == 3, let seconds = Double(args[2]) else { throw TestkitError.usage("hold-resource-lock <mediaDir> <id> <seconds>") }
    let box = try MediaBox(basePath: args[0])
    guard let reader = try box.openForReading(MediaResourceId(args[1]), touch: false) else {
        throw TestkitError.failed("resource \(args[1]) not found")
    }
    emit("locked")
    Thread.sleep(forTimeInterval: seconds)
    reader.close()
}

private func writePartialSlowly(_ args: [String]) throws {
    guard args.count == 5, let size = Int64(args[2]), let chunk = Int(args[3]), let delay = Int(args[4]) else {
        throw TestkitError.usage("write-partial-slowly <mediaDir> <id> <size> <chunk> <delayMs>")
    }
    let id = args[1]
    let fetcher = ClosureMediaResourceFetcher { request in
        AsyncThrowingStream { continuation in
            let task = Task {
                for range in request.missingRanges {
                    var offset = range.lowerBound
                    let end = min(range.upperBound, size)
                    while offset < end {
                        let n = Int(min(Int64(chunk), end - offset))
                        continuation.yield(.dataPart(offset: offset, data: MediaTestPattern.bytes(id: id, offset: offset, count: n)))
                        offset += Int64(n)
                        emit("progress \(offset)")
                        try? await Task.sleep(for: .milliseconds(delay))
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
    let box = try MediaBox(basePath: args[0], fetcher: fetcher)
    try blockingAwait {
        let data = try await box.fetch(SimpleMediaResource(id, size: size), info: MediaResourceStorageInfo(peerId: PeerId(1), contentType: .file))
        emit("done \(data.size)")
    }
}

private func storeLoop(_ args: [String]) throws {
    guard args.count == 3, let count = Int(args[1]), let size = Int(args[2]) else { throw TestkitError.usage("store-loop <mediaDir> <count> <size>") }
    let box = try MediaBox(basePath: args[0])
    for i in 0..<count {
        let id = "r\(i)"
        try box.store(
            MediaTestPattern.bytes(id: id, offset: 0, count: size), id: MediaResourceId(id),
            info: MediaResourceStorageInfo(peerId: PeerId(Int64(i % 3 + 1)), contentType: .photo))
        emit("stored \(i)")
    }
}

private func cleanupCommand(_ args: [String]) throws {
    guard args.count >= 2, let limit = Int64(args[1]) else { throw TestkitError.usage("cleanup <mediaDir> <sizeLimit> [batchSize]") }
    let box = try MediaBox(basePath: args[0])
    var options = CleanupOptions(sizeLimit: limit, removalThreads: 2)
    if args.count >= 3, let b = Int(args[2]) { options.batchSize = b }
    let report = try TimeBasedCleanup(mediaBox: box).run(options)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    emit(String(decoding: try encoder.encode(report), as: UTF8.self))
}

private func openMedia(_ args: [String]) throws {
    guard args.count == 1 else { throw TestkitError.usage("open-media <mediaDir>") }
    let box = try MediaBox(basePath: args[0])
    emit("opened \(box.layout)")
}
