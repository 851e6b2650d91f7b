import CloudCore
import CloudServer
import Foundation
import MediaBox
import XCTest

/// How many part buffers a download keeps alive when the disk (the consumer) is slower than the
/// network: never more than the parts in its window, whatever the file's size.
final class MultipartFetchMemoryTests: XCTestCase {
    func testSlowConsumerKeepsOnlyTheWindowOfPartsAlive() async throws {
        let fx = try await FetchFixture.start { $0.dataset.bigFiles = [16 << 20] }
        do {
            let doc = try unwrap(try await fx.benchDocuments().first)
            let resource = CloudDocumentMediaResource(document: doc, reference: .standalone)
            let counting = BodyCountingTransport(fx.transport)
            let window = 2
            let fetch = MultipartFetch(transport: counting, configuration: fx.configuration { $0.maxPartsPerFile = window })
            let box = try fx.mediaBox(fetcher: SlowReadingFetcher(inner: fetch, pause: .milliseconds(40)))
            try await fx.fetchAndCheck(box, resource, fileId: doc.id)
            XCTAssertEqual(counting.bodies, 16, "sixteen 1 MiB parts fetched")
            // The window's parts plus the one the slow reader holds.
            XCTAssertLessThanOrEqual(counting.peakAlive, window + 1, "part buffers alive at once")
            XCTAssertEqual(counting.alive, 0, "every part buffer released after the download")
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }
}

/// A real transport whose part bodies (≥ 64 KiB) are handed out in buffers it counts while they
/// are alive, wherever they are held.
final class BodyCountingTransport: Transport, @unchecked Sendable {
    // @unchecked Sendable: the counters are guarded by `lock`.
    private let inner: any Transport
    private let lock = NSLock()
    private var _alive = 0
    private var _peak = 0
    private var _bodies = 0

    init(_ inner: any Transport) { self.inner = inner }

    var alive: Int { lock.withLock { _alive } }
    var peakAlive: Int { lock.withLock { _peak } }
    var bodies: Int { lock.withLock { _bodies } }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        var response = try await inner.send(request)
        let count = response.body.count
        guard count >= 64 << 10 else { return response }
        let copy = malloc(count)!
        response.body.copyBytes(to: copy.assumingMemoryBound(to: UInt8.self), count: count)
        lock.withLock {
            _alive += 1
            _bodies += 1
            _peak = max(_peak, _alive)
        }
        response.body = Data(
            bytesNoCopy: copy, count: count,
            deallocator: .custom { [self] pointer, _ in
                free(pointer)
                lock.withLock { _alive -= 1 }
            })
        return response
    }
}

/// A fetcher that takes each event from `inner` and holds it for `pause` before passing it on: a
/// consumer slower than the network, as a busy disk is. Parts reach it in memory.
struct SlowReadingFetcher: MediaResourceFetcher {
    let inner: any MediaResourceFetcher
    let pause: Duration

    private final class State: @unchecked Sendable {
        // @unchecked Sendable: used by one consumer at a time (MediaBox's fetch loop).
        var iterator: AsyncThrowingStream<MediaResourceFetchEvent, any Error>.AsyncIterator
        init(_ s: AsyncThrowingStream<MediaResourceFetchEvent, any Error>) { iterator = s.makeAsyncIterator() }
    }

    func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> {
        // Without the part writer: the parts come as buffers (a writer would put them straight
        // into the file, holding no buffer at all), so the window over buffers is what is measured.
        var buffered = request
        buffered.partWriter = nil
        let state = State(inner.fetch(buffered))
        let pause = self.pause
        return AsyncThrowingStream(unfolding: {
            guard let event = try await state.iterator.next() else { return nil }
            try await Task.sleep(for: pause)
            return event
        })
    }
}
