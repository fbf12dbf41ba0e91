package import Hummingbird
package import Logging
import NIOCore

/// What operators poll on a long-running command (`digest send --metrics-port P`): `/healthz` and
/// `/metrics` on Hummingbird; every other path answers 404.
///
/// - `GET /metrics`: `metrics()` as Prometheus text (`text/plain; version=0.0.4`).
/// - `GET /healthz`: 200 and `ok` when ``Health/isReady``, else 503 and `unavailable`; then one
///   `name: detail` line per check.
///
/// Run it (``run(onServerRunning:)``, or ``application(onServerRunning:)`` as a `Service`) in the
/// command's `ServiceGroup`, which stops it gracefully on SIGTERM.
///
/// ```swift
/// let endpoint = OperatorEndpoint(
///     configuration: .init(port: 9464),
///     health: { .init(isReady: true, checks: [.init("sender", "sending")]) },
///     metrics: { "# TYPE digest_up gauge\ndigest_up 1\n" })
/// services.append(.init(service: endpoint.application()))  // beside the sender's service
/// ```
package struct OperatorEndpoint: Sendable {
    /// Where the endpoint listens.
    package struct Configuration: Sendable {
        /// Loopback unless the metrics are meant to be scraped from elsewhere.
        package var host: String
        /// 0 picks a free port (see `onServerRunning`).
        package var port: Int

        package init(host: String = "127.0.0.1", port: Int) {
            self.host = host
            self.port = port
        }
    }

    /// The answer of `/healthz`.
    package struct Health: Sendable, Hashable {
        /// One aspect and what it is doing ("credentials": "token valid for 3540 s").
        package struct Check: Sendable, Hashable {
            package var name: String
            package var detail: String

            package init(_ name: String, _ detail: String) {
                self.name = name
                self.detail = detail
            }
        }

        /// 200 when true, 503 when false.
        package var isReady: Bool
        package var checks: [Check]

        package init(isReady: Bool, checks: [Check]) {
            self.isReady = isReady
            self.checks = checks
        }

        /// `ok` or `unavailable`, then `name: detail` lines, each line ending in a newline.
        package var text: String {
            ([isReady ? "ok" : "unavailable"] + checks.map { "\($0.name): \($0.detail)" }).map { $0 + "\n" }.joined()
        }
    }

    package let configuration: Configuration
    private let health: @Sendable () async -> Health
    private let metrics: @Sendable () -> String
    private let logger: Logger

    package init(
        configuration: Configuration, logger: Logger = Logger(label: "digest.operator"),
        health: @escaping @Sendable () async -> Health, metrics: @escaping @Sendable () -> String
    ) {
        self.configuration = configuration
        self.logger = logger
        self.health = health
        self.metrics = metrics
    }

    /// `/healthz` and `/metrics`; Hummingbird answers 404 to anything else.
    package func router() -> Router<BasicRequestContext> {
        let router = Router()
        let health = self.health, metrics = self.metrics
        router.get("healthz") { _, _ in
            let report = await health()
            return Response(
                status: report.isReady ? .ok : .serviceUnavailable,
                headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: report.text)))
        }
        router.get("metrics") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: metrics())))
        }
        return router
    }

    /// The endpoint as a Hummingbird application; `onServerRunning` learns the port it got.
    package func application(
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        Application(
            router: router(),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "digest"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
    }

    /// Serves until the enclosing `ServiceGroup` shuts down gracefully; throws when it cannot listen.
    package func run(onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        try await application(onServerRunning: onServerRunning).run()
    }
}
