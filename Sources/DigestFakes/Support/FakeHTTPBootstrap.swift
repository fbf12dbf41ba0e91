import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// Listening for a ``FakeHTTPService``: with TLS, HTTP/2 (``FakeHTTP2Handler``, the frame level) or
/// HTTP/1.1 (``FakeHTTP1Handler``) as ALPN decides; without, HTTP/1.1.
enum FakeHTTPBootstrap {
    /// A server channel bound to `host:port` (0: any free port) for `service`; its HTTP/2 connections
    /// advertise `maxConcurrentStreams`.
    static func bind(
        _ service: any FakeHTTPService, host: String, port: Int, sslContext: NIOSSLContext?, maxConcurrentStreams: Int
    ) async throws -> any Channel {
        let connection = {
            var connection = NIOHTTP2Handler.ConnectionConfiguration()
            connection.initialSettings = nioDefaultSettings.filter { $0.parameter != .maxConcurrentStreams }
                + [HTTP2Setting(parameter: .maxConcurrentStreams, value: max(1, maxConcurrentStreams))]
            return connection
        }()
        return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 1024)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                guard let sslContext else {
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(FakeHTTP1Handler(server: service))
                    }
                }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                }.flatMap {
                    channel.configureHTTP2SecureUpgrade { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(
                                NIOHTTP2Handler(mode: .server, connectionConfiguration: connection, streamConfiguration: .init()))
                            try channel.pipeline.syncOperations.addHandler(FakeHTTP2Handler(server: service))
                        }
                    } http1ChannelConfigurator: { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                            try channel.pipeline.syncOperations.addHandler(FakeHTTP1Handler(server: service))
                        }
                    }
                }
            }
            .bind(host: host, port: port).get()
    }
}
