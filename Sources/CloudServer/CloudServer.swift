import CloudProtocol
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix

/// The reference cloud server: N datacenters and a CDN on loopback ports in one process,
/// sharing one synthetic dataset. Start it in-process with `CloudServer.start(_:)`.
public final class CloudServer: Sendable {
    /// DC base URLs in DC order (index 0 = DC 1).
    public let dcURLs: [URL]
    /// The CDN base URL.
    public let cdnURL: URL
    /// Where `/admin/*` lives (DC 1; any DC answers admin calls).
    public var adminURL: URL { dcURLs[0] }
    /// The directory holding uploaded parts and files.
    public let uploadDirectory: String

    let core: ServerCore
    private let tasks: [Task<Void, Never>]
    /// The listeners' threads, the server's own: `stop()` ends them, so no thread of the server
    /// still runs when a process that stopped it exits (and tears down the runtime under it).
    private let eventLoopGroup: MultiThreadedEventLoopGroup
    private let ownsUploadDirectory: Bool

    private init(
        dcURLs: [URL], cdnURL: URL, core: ServerCore, tasks: [Task<Void, Never>], eventLoopGroup: MultiThreadedEventLoopGroup,
        uploadDirectory: String, owns: Bool
    ) {
        self.dcURLs = dcURLs
        self.cdnURL = cdnURL
        self.core = core
        self.tasks = tasks
        self.eventLoopGroup = eventLoopGroup
        self.uploadDirectory = uploadDirectory
        self.ownsUploadDirectory = owns
    }

    /// Builds the dataset, binds every listener and returns once all accept connections.
    public static func start(_ config: CloudServerConfig) async throws -> CloudServer {
        let owns = config.uploadDirectory == nil
        let dir = config.uploadDirectory ?? (NSTemporaryDirectory() as NSString).appendingPathComponent("cloudd-\(getpid())-\(UUID().uuidString.prefix(8))")
        let core = try ServerCore(config: config, uploadDirectory: dir)
        var roles: [(ListenerRole, Int)] = []
        for dc in 1...max(1, config.dcCount) {
            roles.append((.dc(dc), config.portBase == 0 ? 0 : config.portBase + dc - 1))
        }
        roles.append((.cdn, config.portBase == 0 ? 0 : config.portBase + 100))

        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        var tasks: [Task<Void, Never>] = []
        var ports: [Int] = []
        do {
            for (role, port) in roles {
                let (task, bound) = try await listen(core: core, role: role, host: config.host, port: port, group: group)
                tasks.append(task)
                ports.append(bound)
            }
        } catch {
            await shutDown(tasks, core, group)
            throw error
        }
        let urls = ports.map { URL(string: "http://\(config.host):\($0)")! }
        let dcURLs = Array(urls.dropLast())
        core.urls.withLock { u in
            for (i, url) in dcURLs.enumerated() { u.dcs[i + 1] = url.absoluteString }
            u.cdn = urls.last!.absoluteString
        }
        return CloudServer(
            dcURLs: dcURLs, cdnURL: urls.last!, core: core, tasks: tasks, eventLoopGroup: group, uploadDirectory: dir, owns: owns)
    }

    /// Runs one listener; returns its task and the bound port once it accepts connections.
    private static func listen(
        core: ServerCore, role: ListenerRole, host: String, port: Int, group: MultiThreadedEventLoopGroup
    ) async throws -> (Task<Void, Never>, Int) {
        let signal = PortSignal()
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            await core.respond(to: request, role: role)
        }
        let app = Application(
            responder: responder,
            configuration: .init(address: .hostname(host, port: port), serverName: nil, reuseAddress: true),
            onServerRunning: { channel in signal.resolve(.success(channel.localAddress?.port ?? port)) },
            eventLoopGroupProvider: .shared(group),
            logger: Logger(label: "cloudd", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let task = Task {
            do {
                try await app.run()
                signal.resolve(.failure(CloudError(.internalError, message: "listener stopped before binding")))
            } catch {
                signal.resolve(.failure(error))
            }
        }
        let bound = try await signal.value()
        return (task, bound)
    }

    /// Stops every listener (in-flight requests are cut), background part hashing and the
    /// listeners' threads, and removes a temporary upload directory.
    public func stop() async {
        await Self.shutDown(tasks, core, eventLoopGroup)
        if ownsUploadDirectory { try? FileManager.default.removeItem(atPath: uploadDirectory) }
    }

    /// Ends the listeners, then background part hashing, then the listeners' threads.
    private static func shutDown(_ tasks: [Task<Void, Never>], _ core: ServerCore, _ group: MultiThreadedEventLoopGroup) async {
        for t in tasks { t.cancel() }
        for t in tasks { await t.value }
        await core.bytes.stopPartHashes()
        try? await group.shutdownGracefully()
    }

    /// The one-line JSON `cloudd` prints when ready:
    /// `{"admin":"…","cdn":{"id":101,"url":"…"},"dcs":[{"id":1,"url":"…"},…]}`.
    public var readyLine: String {
        struct Ready: Encodable {
            let dcs: [DcOption]
            let cdn: DcOption
            let admin: String
            let pid: Int32
        }
        let r = Ready(
            dcs: dcURLs.enumerated().map { DcOption(id: $0.offset + 1, url: $0.element.absoluteString) },
            cdn: DcOption(id: ServerCore.cdnDcId, url: cdnURL.absoluteString), admin: adminURL.absoluteString, pid: getpid())
        return String(decoding: try! HTTPSupport.encoder.encode(r), as: UTF8.self)
    }

    /// Number of files in the dataset (for logs).
    public var fileCount: Int { core.dataset.withLock { $0.files.count } }
}

/// A one-shot result handed from `onServerRunning` (or a failing run) to `start`.
private final class PortSignal: Sendable {
    private let state = Locked<(result: Result<Int, any Error>?, waiter: CheckedContinuation<Int, any Error>?)>((nil, nil))

    func resolve(_ r: Result<Int, any Error>) {
        let waiter: CheckedContinuation<Int, any Error>? = state.withLock { s in
            guard s.result == nil else { return nil }
            s.result = r
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(with: r)
    }

    func value() async throws -> Int {
        try await withCheckedThrowingContinuation { c in
            let ready: Result<Int, any Error>? = state.withLock { s in
                if let r = s.result { return r }
                s.waiter = c
                return nil
            }
            if let ready { c.resume(with: ready) }
        }
    }
}
