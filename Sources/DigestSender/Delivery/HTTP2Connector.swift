import AsyncHTTPClient
import Foundation
package import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// Opens the sender's own HTTP/2 connections (``HTTP2Connection``) to an `https` endpoint: TCP,
/// TLS offering `h2` and `http/1.1` by ALPN, then `NIOHTTP2Handler` at the frame level. An endpoint
/// that does not choose `h2` is left to async-http-client. One connector per provider: its URL's
/// path (FCM's `messages:send`; APNs gives one per request), its content type, and whether a new
/// connection carries one stream until a request succeeded (APNs' rule).
package final class HTTP2Connector: Sendable {
    /// Where requests go, from the endpoint's URL.
    let host: String
    let port: Int
    /// `:authority` and `:path` of every request.
    let authority: String
    let path: String
    /// Connecting, the TLS handshake and the server's first SETTINGS together take at most this long.
    let connectTimeout: TimeAmount
    /// `content-type` of every request.
    let contentType: String
    /// A new connection opens one stream at a time until a request on it was answered 200, then as
    /// many as the server allows (APNs).
    let oneStreamUntilSuccess: Bool
    /// When set, the host is resolved here (off the event loop) and the address it gives checked
    /// before anything is connected; an address it refuses fails the connection with its error (Web
    /// Push: ``PushHostPolicy``). The connection then goes to that very address.
    let addressCheck: (@Sendable (SocketAddress) -> (any Error)?)?
    private let tls: TLSConfiguration
    /// Made on first use, shared by every connection (making one reads the trust roots).
    private let sslContext = Mutex<Result<NIOSSLContext, any Error>?>(nil)

    /// For an `https` `url` (nil otherwise); `caFile`: a PEM file of extra trusted CA certificates.
    package init?(
        url: String, caFile: String?, connectTimeout: NIOCore.TimeAmount = .seconds(5), contentType: String = HTTP2Connector.fcmContentType,
        oneStreamUntilSuccess: Bool = false, addressCheck: (@Sendable (SocketAddress) -> (any Error)?)? = nil
    ) {
        guard let components = URLComponents(string: url), components.scheme?.lowercased() == "https", let host = components.host, !host.isEmpty
        else { return nil }
        self.host = host
        self.port = components.port ?? 443
        self.authority = components.port.map { "\(host):\($0)" } ?? host
        self.path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        self.connectTimeout = connectTimeout
        self.contentType = contentType
        self.oneStreamUntilSuccess = oneStreamUntilSuccess
        self.addressCheck = addressCheck
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.additionalTrustRoots = [.file(caFile)] }
        tls.applicationProtocols = ["h2", "http/1.1"]
        self.tls = tls
    }

    /// FCM's `content-type`.
    package static let fcmContentType = "application/json; charset=UTF-8"

    private func context() throws -> NIOSSLContext {
        try sslContext.withLock { cached in
            if let cached { return try cached.get() }
            let made = Result { try NIOSSLContext(configuration: tls) }
            cached = made
            return try made.get()
        }
    }

    /// A new connection on `loop`, ready once the server's SETTINGS came; nil when the server chose
    /// another protocol than `h2` (the connection is closed).
    func connect(on loop: any EventLoop, requestTimeout: TimeAmount) -> EventLoopFuture<HTTP2Connection?> {
        let sslContext: NIOSSLContext
        do { sslContext = try context() } catch { return loop.makeFailedFuture(error) }
        let promise = loop.makePromise(of: HTTP2Connection?.self)
        // An IP address is no server name (SNI); NIOSSL then checks the certificate against the address.
        let serverName = host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) ? nil : host
        let timeout = connectTimeout
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let negotiation = NIOTypedApplicationProtocolNegotiationHandler<Void> { result, channel in
                        channel.eventLoop.makeCompletedFuture {
                            guard case .negotiated("h2") = result else {
                                promise.assumeIsolated().succeed(nil)
                                channel.close(promise: nil)
                                return
                            }
                            let ready = channel.eventLoop.makePromise(of: Void.self)
                            let connection = HTTP2Connection(ready: ready, timeout: requestTimeout, oneStreamUntilSuccess: self.oneStreamUntilSuccess)
                            try channel.pipeline.syncOperations.addHandler(
                                NIOHTTP2Handler(mode: .client, initialSettings: HTTP2Connection.settings))
                            try channel.pipeline.syncOperations.addHandler(connection)
                            ready.futureResult.assumeIsolated().whenComplete { result in
                                switch result {
                                case .success: promise.assumeIsolated().succeed(connection)
                                case .failure(let error): promise.fail(error)
                                }
                            }
                        }
                    }
                    try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                    try channel.pipeline.syncOperations.addHandler(negotiation)
                    try channel.pipeline.syncOperations.addHandler(HandshakeFailure(promise: promise))
                }
            }
        let started: EventLoopFuture<any Channel>
        if let addressCheck {
            let host = host, port = port
            started = NIOThreadPool.singleton.runIfActive(eventLoop: loop) {
                try SocketAddress.makeAddressResolvingHost(host, port: port)
            }.flatMapThrowing { address in
                if let refusal = addressCheck(address) { throw refusal }
                return address
            }.flatMap { bootstrap.connect(to: $0) }
        } else {
            started = bootstrap.connect(host: host, port: port)
        }
        started.whenComplete { result in
            switch result {
            case .success(let channel):
                // The handshake and the first SETTINGS within the connect timeout too.
                let timer = loop.scheduleTask(in: timeout) {
                    promise.fail(HTTPClientError.connectTimeout)
                    channel.close(promise: nil)
                }
                promise.futureResult.whenComplete { _ in timer.cancel() }
            case .failure(let error):
                promise.fail(error)
            }
        }
        return promise.futureResult
    }
}

extension HTTP2Connection {
    /// This side's SETTINGS: no server push, ``streamWindow`` per stream.
    static let settings: HTTP2Settings = [
        HTTP2Setting(parameter: .enablePush, value: 0),
        HTTP2Setting(parameter: .initialWindowSize, value: streamWindow),
        HTTP2Setting(parameter: .maxHeaderListSize, value: 1 << 16),
    ]
}

/// Fails the connection's promise when TLS or the connection fails before HTTP/2 is set up (a
/// promise completed already ignores it). Removed with the rest of the pipeline when the channel goes.
private final class HandshakeFailure: ChannelInboundHandler {
    typealias InboundIn = Any

    private let promise: EventLoopPromise<HTTP2Connection?>

    init(promise: EventLoopPromise<HTTP2Connection?>) { self.promise = promise }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(HTTPClientError.remoteConnectionClosed)
        context.fireChannelInactive()
    }
}
