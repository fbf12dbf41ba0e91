import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
public import ServiceLifecycle

/// A tiny HTTP endpoint that answers every GET with `render()` (Prometheus text on `/metrics`).
/// A `Service`: it listens until graceful shutdown.
public struct MetricsEndpoint: Service {
    public let host: String
    public let port: Int
    private let render: @Sendable () -> String
    private let onBound: @Sendable (Int) -> Void

    /// `port` 0 picks a free one; `onBound` learns which.
    public init(host: String = "127.0.0.1", port: Int, onBound: @escaping @Sendable (Int) -> Void = { _ in },
                render: @escaping @Sendable () -> String) {
        self.host = host
        self.port = port
        self.render = render
        self.onBound = onBound
    }

    public func run() async throws {
        let render = self.render
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(MetricsHandler(render: render))
                }
            }
            .bind(host: host, port: port).get()
        onBound(channel.localAddress?.port ?? port)
        await withGracefulShutdownHandler {
            try? await gracefulShutdown()
        } onGracefulShutdown: {}
        try? await channel.close()
    }
}

private final class MetricsHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    let render: @Sendable () -> String

    init(render: @escaping @Sendable () -> String) { self.render = render }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        let body = ByteBuffer(string: render())
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
