// Cloud child-process commands (SIGKILL-midway download tests).
import CloudCore
import CloudProtocol
import Foundation
import MediaBox

/// - `fetch-cloud-document <mediaDir> <dc1URL,dc2URL,…> <documentJSON> [maxPartsPerFile]`:
///   downloads the document with MultipartFetch into the MediaBox at `mediaDir`, printing
///   `part <offset> <length>` as each verified part is handed to MediaBox and `done <size>` at
///   the end. A parent SIGKILLs it midway and resumes in-process.
let cloudCommands: [String: TestkitCommand] = [
    "fetch-cloud-document": fetchCloudDocument
]

private struct CloudUsageError: Error, CustomStringConvertible { let description: String }

/// Prints each data part as it passes to MediaBox.
private struct AnnouncingFetcher: MediaResourceFetcher {
    let inner: any MediaResourceFetcher
    private final class State: @unchecked Sendable {
        // @unchecked Sendable: one consumer (MediaBox's fetch loop) at a time.
        var iterator: AsyncThrowingStream<MediaResourceFetchEvent, any Error>.AsyncIterator
        init(_ s: AsyncThrowingStream<MediaResourceFetchEvent, any Error>) { iterator = s.makeAsyncIterator() }
    }
    func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> {
        let state = State(inner.fetch(request))
        return AsyncThrowingStream(unfolding: {
            guard let e = try await state.iterator.next() else { return nil }
            switch e {
            case let .dataPart(offset, data): emit("part \(offset) \(data.count)")
            case let .dataWritten(offset, length): emit("part \(offset) \(length)")
            case .resourceSizeUpdated: break
            }
            return e
        })
    }
}

private func fetchCloudDocument(_ args: [String]) throws {
    guard args.count >= 3 else { throw CloudUsageError(description: "fetch-cloud-document <mediaDir> <dcURLs> <documentJSON> [maxPartsPerFile]") }
    let document = try JSONDecoder().decode(Document.self, from: Data(args[2].utf8))
    var dcs: [Int: String] = [:]
    for (i, u) in args[1].split(separator: ",").enumerated() { dcs[i + 1] = String(u) }
    var configuration = MultipartFetchConfiguration(datacenters: dcs)
    if args.count > 3, let n = Int(args[3]) { configuration.maxPartsPerFile = n }
    let semaphore = DispatchSemaphore(value: 0)
    final class Outcome: @unchecked Sendable { var error: (any Error)? }
    let outcome = Outcome()
    Task {
        do {
            let fetch = MultipartFetch(transport: try CurlTransport(), configuration: configuration)
            let box = try MediaBox(basePath: args[0], fetcher: AnnouncingFetcher(inner: fetch))
            let data = try await box.fetch(CloudDocumentMediaResource(document: document, reference: .standalone), info: MediaResourceStorageInfo())
            emit("done \(data.size)")
        } catch {
            outcome.error = error
        }
        semaphore.signal()
    }
    semaphore.wait()
    if let e = outcome.error { throw e }
}
