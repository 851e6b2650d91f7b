// Cloud child-process commands (SIGKILL-midway download tests).
import CloudCore
import CloudProtocol
import Foundation
import MediaBox

/// - `fetch-cloud-document <mediaDir> <dc1URL,dc2URL,…> <documentJSON> [maxPartsPerFile]`:
///   downloads the document with MultipartFetch into the MediaBox at `mediaDir`, printing
///   `part <offset> <length>` as each verified part is handed to MediaBox and `done <size>` at
///   the end. A parent SIGKILLs it midway and resumes in-process.
/// - `transfer-rounds <outDir> <downloadURL> <uploadURLPrefix> <uploadFile> <rounds> [caFile]`:
///   in a process whose first libcurl user is `CurlTransport`, downloads `downloadURL` to
///   `outDir/<i>.bin` and PUTs `uploadFile` to `uploadURLPrefix<i>.bin`, one after the other,
///   `rounds` times, then prints `http <version>` of the last answer and `reused <n>`: how many
///   transfer buffers came from kept blocks. `caFile` is a CA to trust for `https` URLs.
let cloudCommands: [String: TestkitCommand] = [
    "fetch-cloud-document": fetchCloudDocument,
    "transfer-rounds": transferRounds,
]

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
            case let .replaceHeader(data): emit("header \(data.count)")
            case .resourceSizeUpdated, .headerRevision: break
            }
            return e
        })
    }
}

private func fetchCloudDocument(_ args: [String]) throws {
    guard args.count >= 3 else { throw TestkitError.usage("fetch-cloud-document <mediaDir> <dcURLs> <documentJSON> [maxPartsPerFile]") }
    let document = try JSONDecoder().decode(Document.self, from: Data(args[2].utf8))
    var dcs: [Int: String] = [:]
    for (i, u) in args[1].split(separator: ",").enumerated() { dcs[i + 1] = String(u) }
    var configuration = MultipartFetchConfiguration(datacenters: dcs)
    if args.count > 3, let n = Int(args[3]) { configuration.maxPartsPerFile = n }
    try blockingAwait { [configuration] in
        let fetch = MultipartFetch(transport: try CurlTransport(), configuration: configuration)
        let box = try MediaBox(basePath: args[0], fetcher: AnnouncingFetcher(inner: fetch))
        let data = try await box.fetch(CloudDocumentMediaResource(document: document, reference: .standalone), info: MediaResourceStorageInfo())
        emit("done \(data.size)")
    }
}

private func transferRounds(_ args: [String]) throws {
    guard (5...6).contains(args.count), let rounds = Int(args[4]) else {
        throw TestkitError.usage("transfer-rounds <outDir> <downloadURL> <uploadURLPrefix> <uploadFile> <rounds> [caFile]")
    }
    var configuration = TransportConfiguration()
    if args.count == 6 { configuration.caFile = args[5] }
    let body = try Data(contentsOf: URL(fileURLWithPath: args[3]))
    try blockingAwait { [configuration] in
        let transport = try CurlTransport(configuration: configuration)
        var version = 0
        for round in 0..<rounds {
            let fd = open("\(args[0])/\(round).bin", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            guard fd >= 0 else { throw TestkitError.failed("cannot create \(args[0])/\(round).bin") }
            defer { close(fd) }
            let got = try await transport.download(args[1], to: fd, at: 0)
            let put = try await transport.send(HTTPRequest(url: "\(args[2])\(round).bin", method: .put, body: .data(body)))
            guard got.status == 200, (200..<300).contains(put.status) else {
                throw TestkitError.failed("round \(round): GET \(got.status), PUT \(put.status)")
            }
            version = put.httpVersion
        }
        emit("http \(version)")
        emit("reused \(CurlTransport.reusedTransferBuffers)")
    }
}
