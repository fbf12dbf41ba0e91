public import AsyncHTTPClient
import NIOCore
import NIOSSL

extension HTTPClient.Configuration {
    /// Event loops of `digest send`'s clients: one. The sender's driver loop, its store tasks and
    /// every message's task and request then share one thread and never wake another loop; the
    /// outbox thread and the server (FCM's, or the fake one on loopback) have the other cores.
    /// Measured on two cores against the fake server: about 10% less sender CPU a message than with a
    /// loop per core (medians of eight interleaved runs, 77 against 85 µs), as many messages a second.
    public static let pushSenderEventLoops = 1

    /// The client configuration of `digest send`'s senders, every provider's (FCM's clients, the client
    /// that lends APNs' connections their event loops, the Web Push client that carries the push
    /// services' HTTP/1.1 requests), shared with the `digest-fcm-load` driver so that the two measure
    /// the same client.
    ///
    /// - At most `concurrency` HTTP/1.1 connections to the host (HTTP/2 when TLS offers it); the
    ///   sender's ``HTTP2Exchange`` hands the client no more requests at once than it may carry.
    /// - Each request has its own deadline (``PushSender/Configuration/requestTimeout``), so no read
    ///   timeout: it would start, reset and cancel a timer on every request and answer.
    /// - No provider redirects (a redirect stops the sender: the endpoint is wrong) and no tracer is
    ///   bootstrapped; without these settings every request would carry redirect state and a no-op span.
    /// - `caFile`: a PEM file of extra trusted CA certificates (a private endpoint, a test server).
    public static func pushSender(concurrency: Int, caFile: String? = nil) -> Self {
        var configuration = HTTPClient.Configuration()
        configuration.httpVersion = .automatic
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: concurrency)
        configuration.timeout = .init(connect: .seconds(5))
        configuration.redirectConfiguration = .disallow
        configuration.tracing.tracer = nil
        if let caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(caFile)]
            configuration.tlsConfiguration = tls
        }
        return configuration
    }
}
