import Foundation
import NIOCore
import NIOPosix

/// A TCP proxy on loopback that puts a `NetworkDelay` in front of a server without delay knobs
/// of its own (an S3 server such as moto): on each connection, the first bytes of every answer
/// (the first the server sends after the client sent something) wait the latency, as `cloudd`
/// waits before each of its own answers, and each answer's bytes are paced to the bandwidth.
/// Each request's bytes (from the first the client sends after an answer began) are paced to
/// the same bandwidth, as `cloudd` reads its request bodies: a link's bandwidth holds both ways.
/// Both the product and its peers connect through the same proxy, so they wait exactly as long.
/// The delay can be changed while connections are open; an answer or a request already under
/// way keeps the one it started with.
public final class DelayingProxy: Sendable {
    /// The port the proxy listens on (`127.0.0.1`).
    public let port: Int
    private let delay: Locked<NetworkDelay>
    private let listener: any Channel
    private let serving: Task<Void, Never>

    /// Listens on an ephemeral loopback port and relays every connection to
    /// `upstreamHost:upstreamPort`.
    public static func start(upstreamHost: String = "127.0.0.1", upstreamPort: Int, delay: NetworkDelay = NetworkDelay()) async throws
        -> DelayingProxy
    {
        let state = Locked(delay)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        let serving = Task<Void, Never> {
            try? await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { connections in
                    for try await client in connections {
                        group.addTask { await relay(client, to: upstreamHost, port: upstreamPort, delay: state) }
                    }
                }
            }
        }
        return DelayingProxy(port: server.channel.localAddress?.port ?? 0, delay: state, listener: server.channel, serving: serving)
    }

    private init(port: Int, delay: Locked<NetworkDelay>, listener: any Channel, serving: Task<Void, Never>) {
        self.port = port
        self.delay = delay
        self.listener = listener
        self.serving = serving
    }

    /// The delay answers get from now on.
    public var current: NetworkDelay {
        get { delay.withLock { $0 } }
        set { delay.withLock { $0 = newValue } }
    }

    /// Stops listening and closes every relayed connection.
    public func stop() async {
        try? await listener.close()
        serving.cancel()
        await serving.value
    }
}

/// Relays one client connection until either side closes it.
private func relay(_ client: NIOAsyncChannel<ByteBuffer, ByteBuffer>, to host: String, port: Int, delay: Locked<NetworkDelay>) async {
    do {
        let upstream = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        // Set when the client sends bytes; the next bytes from the server begin an answer.
        let answerDue = Locked(false)
        // Set when the server sends bytes; the next bytes from the client begin a request.
        let requestDue = Locked(true)
        try await client.executeThenClose { clientIn, clientOut in
            try await upstream.executeThenClose { serverIn, serverOut in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        var pacer = NetworkDelay().pacer()
                        var sent: Int64 = 0
                        for try await buffer in clientIn {
                            answerDue.withLock { $0 = true }
                            if requestDue.withLock({ due in
                                defer { due = false }; return due
                            }) {
                                pacer = delay.withLock { $0 }.pacer()
                                sent = 0
                            }
                            sent += Int64(buffer.readableBytes)
                            try await pacer.wait(untilSent: sent)
                            try await serverOut.write(buffer)
                        }
                    }
                    group.addTask {
                        var pacer = NetworkDelay().pacer()
                        var sent: Int64 = 0
                        for try await buffer in serverIn {
                            requestDue.withLock { $0 = true }
                            if answerDue.withLock({ due in
                                defer { due = false }; return due
                            }) {
                                let d = delay.withLock { $0 }
                                try await d.beforeAnswer()
                                pacer = d.pacer()
                                sent = 0
                            }
                            sent += Int64(buffer.readableBytes)
                            try await pacer.wait(untilSent: sent)
                            try await clientOut.write(buffer)
                        }
                    }
                    // Either side closing ends the relay.
                    try await group.next()
                    group.cancelAll()
                }
            }
        }
    } catch {
        // A connection that fails or is reset simply ends, as it would without the proxy.
    }
}
