import CCurl
import Foundation
import Synchronization

/// One libcurl multi handle driven by a dedicated thread.
///
/// Requests arrive through a locked queue (`submit`) and `curl_multi_wakeup` interrupts the
/// thread's `curl_multi_poll`; the thread adds/removes easy handles, runs `curl_multi_perform`,
/// and resumes each transfer's continuation when libcurl reports it done. Blocking in
/// `curl_multi_poll` therefore never occupies a thread of Swift's cooperative pool.
///
/// `@unchecked Sendable`: the multi handle, the pool and the table of running transfers are
/// touched only by the loop thread; the queue and the stop flag are guarded by `lock`; the
/// only cross-thread libcurl call is `curl_multi_wakeup`, which libcurl documents as thread-safe.
/// The multi handle is freed in `deinit`, i.e. after the thread (which retains the loop) ended and
/// no submitter holds a reference.
final class TransportLoop: @unchecked Sendable {
    enum Command {
        case add(CurlTransfer)
        case cancel(CurlTransfer)
    }

    let configuration: TransportConfiguration
    /// Requests sent to this loop and not answered yet (kept by `CurlTransport`, which sends a
    /// streamed answer to the loop with the fewest).
    let inFlight = Atomic<Int>(0)
    private let multi: UnsafeMutableRawPointer

    // Guarded by `lock`.
    private let lock = NSLock()
    private var queue: [Command] = []
    private var stopRequested = false
    private var stopped = false

    // Loop thread only.
    private var running: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var pool: [CurlEasyHandle] = []
    private let limiter: BandwidthLimiter?
    private let hold: TransferHold

    /// `urgent`: the transport's count of urgent requests, shared by all its threads.
    init(configuration: TransportConfiguration, urgent: UrgentRequests = UrgentRequests()) throws {
        try CurlGlobal.ensure()
        guard let multi = curl_multi_init() else {
            throw TransportError.other(code: -1, reason: "curl_multi_init failed")
        }
        self.multi = multi
        self.configuration = configuration
        hold = TransferHold(urgent: urgent)
        limiter = BandwidthLimiter(
            receiveBytesPerSecond: configuration.maxReceiveBytesPerSecond,
            sendBytesPerSecond: configuration.maxSendBytesPerSecond)
        _ = jr_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)
        _ = jr_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
        _ = jr_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, configuration.maxTotalConnections)
        _ = jr_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, configuration.maxTotalConnections)
        _ = jr_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, configuration.maxStreamsPerConnection)
    }

    deinit {
        curl_multi_cleanup(multi)
    }

    /// Starts the loop thread. It keeps the loop alive until `stop()` is processed.
    func start() {
        let thread = Thread { [self] in self.run() }
        thread.name = "jobrun.transport"
        thread.start()
    }

    /// Queues a command for the loop thread. An `add` after `stop()` fails at once.
    func submit(_ command: Command) {
        lock.lock()
        if stopRequested {
            lock.unlock()
            if case .add(let transfer) = command {
                transfer.continuation?.resume(throwing: TransportError.cancelled)
                transfer.continuation = nil
            }
            return
        }
        queue.append(command)
        lock.unlock()
        curl_multi_wakeup(multi)
    }

    /// Makes the thread look again at once (an urgent request began or ended on another thread).
    func wake() {
        curl_multi_wakeup(multi)
    }

    /// Asks the thread to fail every running transfer with ``TransportError/cancelled``, free its
    /// handles and exit.
    func stop() {
        lock.lock()
        stopRequested = true
        lock.unlock()
        curl_multi_wakeup(multi)
    }

    // MARK: loop thread

    private func run() {
        var stillRunning: Int32 = 0
        while true {
            lock.lock()
            let commands = queue
            queue.removeAll(keepingCapacity: true)
            let stopping = stopRequested
            lock.unlock()

            for command in commands {
                switch command {
                case .add(let transfer): add(transfer)
                case .cancel(let transfer): cancel(transfer)
                }
            }
            // The last urgent request has ended: the held transfers go on.
            for transfer in hold.release() { add(transfer) }
            if stopping {
                for transfer in hold.waiting { resumeWaiting(transfer, with: TransportError.cancelled) }
                for transfer in Array(running.values) { finish(transfer, with: .failure(TransportError.cancelled)) }
                pool.removeAll()
                return
            }

            curl_multi_perform(multi, &stillRunning)
            var finishedAny = false
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi, &remaining) {
                guard jr_multi_msg_is_done(message) != 0, let raw = message.pointee.easy_handle,
                    let transfer = running[raw]
                else { continue }
                complete(transfer, code: jr_multi_msg_result(message))
                finishedAny = true
            }
            // A finished transfer's connection may now serve a queued one: run again at once.
            if finishedAny { continue }
            var timeout: Int32 = 1000
            if let wait = limiter?.resumeReady() {
                if wait == 0 { continue }
                timeout = Int32(min(1000, wait))
            }
            curl_multi_poll(multi, nil, 0, timeout, nil)
        }
    }

    private func add(_ transfer: CurlTransfer) {
        if transfer.cancelRequested {
            transfer.continuation?.resume(throwing: CancellationError())
            transfer.continuation = nil
            return
        }
        if hold.mustWait(transfer) { return }
        guard let easy = pool.popLast() ?? CurlEasyHandle() else {
            transfer.continuation?.resume(throwing: TransportError.other(code: -1, reason: "curl_easy_init failed"))
            transfer.continuation = nil
            return
        }
        easy.reset()
        transfer.easy = easy
        transfer.limiter = limiter
        transfer.hold = hold
        do {
            try CurlRequestOptions.apply(transfer, to: easy, configuration: configuration)
        } catch {
            transfer.easy = nil
            recycle(easy)
            transfer.continuation?.resume(throwing: error)
            transfer.continuation = nil
            return
        }
        let code = curl_multi_add_handle(multi, easy.raw)
        guard code == CURLM_OK else {
            transfer.easy = nil
            recycle(easy)
            transfer.continuation?.resume(
                throwing: TransportError.other(
                    code: Int(code.rawValue), reason: String(cString: curl_multi_strerror(code))))
            transfer.continuation = nil
            return
        }
        running[easy.raw] = transfer
    }

    private func cancel(_ transfer: CurlTransfer) {
        if hold.remove(transfer) { return resumeWaiting(transfer, with: CancellationError()) }
        // Not running (not added yet, or already finished): `add` checks the flag itself.
        guard let easy = transfer.easy, running[easy.raw] === transfer else { return }
        finish(transfer, with: .failure(CancellationError()))
    }

    /// libcurl reported the transfer done with `code`.
    private func complete(_ transfer: CurlTransfer, code: CURLcode) {
        guard let easy = transfer.easy else { return }
        if let failure = transfer.failure {
            finish(transfer, with: .failure(failure))
            return
        }
        guard code == CURLE_OK else {
            let error = CurlErrorMapping.error(
                for: code, message: easy.message(for: code), url: transfer.request.url,
                connected: easy.connectionCompleted, received: transfer.received, bodyLimit: transfer.bodyLimit,
                declaredLength: transfer.declaredContentLength ?? easy.infoOffset(CURLINFO_CONTENT_LENGTH_DOWNLOAD_T))
            finish(transfer, with: .failure(error))
            return
        }
        let version: Int
        switch easy.infoLong(CURLINFO_HTTP_VERSION) {
        case CURL_HTTP_VERSION_1_0, CURL_HTTP_VERSION_1_1: version = 1
        case CURL_HTTP_VERSION_2_0: version = 2
        case CURL_HTTP_VERSION_3: version = 3
        default: version = 0
        }
        var response = HTTPResponse(
            status: easy.infoLong(CURLINFO_RESPONSE_CODE),
            headers: transfer.headers,
            body: transfer.takeBody(),
            bytesReceived: transfer.received,
            effectiveURL: easy.infoString(CURLINFO_EFFECTIVE_URL),
            httpVersion: version,
            newConnections: easy.infoLong(CURLINFO_NUM_CONNECTS),
            totalTime: Double(easy.infoOffset(CURLINFO_TOTAL_TIME_T)) / 1_000_000)
        response.bodySHA256 = transfer.takeBodySHA256()
        finish(transfer, with: .success(response))
    }

    /// Detaches the handle, returns it to the pool and resumes the caller.
    /// Fails a transfer that never started (it waited for an urgent request).
    private func resumeWaiting(_ transfer: CurlTransfer, with error: any Error) {
        transfer.continuation?.resume(throwing: error)
        transfer.continuation = nil
    }

    private func finish(_ transfer: CurlTransfer, with result: Result<HTTPResponse, any Error>) {
        limiter?.remove(transfer)
        hold.remove(transfer)
        if let easy = transfer.easy {
            curl_multi_remove_handle(multi, easy.raw)
            running[easy.raw] = nil
            transfer.easy = nil
            recycle(easy)
        }
        if let list = transfer.headerList {
            curl_slist_free_all(list)
            transfer.headerList = nil
        }
        transfer.continuation?.resume(with: result)
        transfer.continuation = nil
    }

    private func recycle(_ easy: CurlEasyHandle) {
        if pool.count < configuration.handlePoolSize { pool.append(easy) }
    }
}
