import MediaBox
import Synchronization

/// A fetcher that passes another's events through unchanged and counts the bytes of each data
/// part into a `TransferProgress` as it lands, so progress moves while a large file downloads.
/// One per file: `counted` is what this file's parts added. A completed file is handed on to the
/// inner fetcher (the shared media tier publishes it there).
final class ProgressCountingFetcher: MediaResourceFetcher {
    private let inner: any MediaResourceFetcher
    private let progress: TransferProgress
    private let total = Atomic<Int64>(0)

    init(_ inner: any MediaResourceFetcher, progress: TransferProgress) {
        self.inner = inner
        self.progress = progress
    }

    /// Bytes this fetcher has counted so far.
    var counted: Int64 { total.load(ordering: .relaxed) }

    private func count(_ bytes: Int64) {
        total.add(bytes, ordering: .relaxed)
        progress.moved(bytes: bytes)
    }

    func fetchCompleted(_ resource: any MediaResource, reader: MediaResourceReader) async {
        await inner.fetchCompleted(resource, reader: reader)
    }

    func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> {
        let upstream = inner.fetch(request)
        let (stream, continuation) = AsyncThrowingStream<MediaResourceFetchEvent, any Error>.makeStream()
        let pump = Task {
            do {
                for try await event in upstream {
                    if event.deliveredBytes > 0 { self.count(Int64(event.deliveredBytes)) }
                    continuation.yield(event)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in pump.cancel() }
        return stream
    }
}
