package import AsyncHTTPClient
import NIOCore
import NIOSSL

extension HTTPClient.Configuration {
    /// The client configuration of `digest send`, shared with the `digest-fcm-load` driver so that the
    /// two measure the same client.
    ///
    /// - `concurrency` HTTP/1.1 connections to the host (HTTP/2 when TLS offers it).
    /// - Each request has its own deadline (``FCMSender/Configuration/requestTimeout``), so no read
    ///   timeout: it would start, reset and cancel a timer on every request and answer.
    /// - FCM does not redirect (a redirect stops the sender: the endpoint is wrong) and no tracer is
    ///   bootstrapped; without these settings every request would carry redirect state and a no-op span.
    /// - `caFile`: a PEM file of extra trusted CA certificates (a private FCM-compatible endpoint).
    package static func fcmSender(concurrency: Int, caFile: String? = nil) -> Self {
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
