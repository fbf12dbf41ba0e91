import ArgumentParser
import AsyncHTTPClient
import DigestSender
import DigestStore
import Foundation
import Logging
import Metrics
import NIOCore
import NIOPosix
import Prometheus
import ServiceLifecycle
import Synchronization
import UnixSignals

struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Deliver due outbox messages to Firebase Cloud Messaging (HTTP v1).",
        discussion: """
            Leases due messages, posts each to {endpoint}/v1/projects/{project_id}/messages:send with an \
            OAuth token from the service account, and settles it by FCM's answer: sent (with FCM's message \
            name); UNREGISTERED → dead and the token remembered as dead; INVALID_ARGUMENT, SENDER_ID_MISMATCH → dead; \
            429 → retried after at least a minute (its Retry-After also holds every connection); 500/503 → retried after Retry-After with exponential \
            backoff and jitter; THIRD_PARTY_AUTH_ERROR or refused credentials → stops with the reason. \
            Requests are spread over several HTTP/2 connections and paced to --rate in any minute; those a GOAWAY \
            left unprocessed are sent again at once. SIGTERM (or Ctrl-C) finishes the requests in flight, releases \
            the other leases and exits 0.
            """)

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The Google service-account JSON key file. Default: $DIGEST_CREDENTIALS, else $GOOGLE_APPLICATION_CREDENTIALS.")
    var credentials: String?

    /// `--credentials`, else `DIGEST_CREDENTIALS`, else `GOOGLE_APPLICATION_CREDENTIALS`.
    var credentialsFile: String? {
        let environment = ProcessInfo.processInfo.environment
        return credentials ?? environment["DIGEST_CREDENTIALS"] ?? environment["GOOGLE_APPLICATION_CREDENTIALS"]
    }

    @Option(help: "FCM's base URL.")
    var endpoint = "https://fcm.googleapis.com"

    @Option(help: "Requests in flight at once, spread over --connections (the default reaches FCM's default quota up to about 120 ms of latency).")
    var concurrency = 1_200

    @Option(help: "HTTP/2 connections to FCM (default: one per 100 of --concurrency; FCM allows 100 streams a connection).")
    var connections: Int?

    @Option(help: "At most this many requests in any minute: FCM's default quota of a project; split it between senders of one project (0: unpaced).")
    var rate = 600_000

    /// `--connections`, else one per 100 requests in flight.
    var connectionCount: Int { connections ?? (concurrency + 99) / 100 }

    @Flag(help: "Exit once nothing due is ready, waiting for a retry, or leased.")
    var drain = false

    @Flag(help: "FCM's dry run: validate every due message, deliver and change nothing.")
    var validateOnly = false

    @Option(help: "Serve Prometheus metrics on this port of --metrics-host (0: any free port).")
    var metricsPort: Int?

    @Option(help: "The address the metrics endpoint listens on.")
    var metricsHost = "127.0.0.1"

    @Option(help: "Seconds a lease holds (extended while the message is held).")
    var leaseSeconds = 60

    @Option(help: "A message that failed this many times is dead.")
    var maxAttempts = 12

    @Option(help: "A PEM file of extra trusted CA certificates (a private FCM-compatible endpoint).")
    var caFile: String?

    @Option(help: "Threads of the HTTP client (its event loops).")
    var eventLoops = HTTPClient.Configuration.fcmSenderEventLoops

    @Option(help: .hidden) var timeScale = 1.0
    @Option(help: .hidden) var pollInterval = 1.0
    @Option(help: .hidden) var owner: String?

    func validate() throws {
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be positive") }
        guard rate >= 0 else { throw ValidationError("--rate must not be negative (0: unpaced)") }
        if let connections { guard (1...concurrency).contains(connections) else { throw ValidationError("--connections must be between 1 and --concurrency") } }
        // A lease must outlive a request (30 s timeout), or the sender's own lease could lapse mid-request.
        guard leaseSeconds >= 45 || timeScale < 1 else { throw ValidationError("--lease-seconds must be at least 45") }
        guard maxAttempts >= 1 else { throw ValidationError("--max-attempts must be positive") }
        guard eventLoops >= 1 else { throw ValidationError("--event-loops must be positive") }
        guard endpoint.hasPrefix("https://") || endpoint.hasPrefix("http://") else {
            throw ValidationError("--endpoint must be an http(s) URL")
        }
        guard timeScale > 0, pollInterval > 0 else { throw ValidationError("--time-scale and --poll-interval must be positive") }
    }

    func run() async throws {
        try await ExitStatus.mapping { try await sendAll() }
    }

    private func sendAll() async throws {
        let logger = Logger(label: "digest.send")
        guard let credentialsFile else {
            throw SenderError(.credentials, "no service-account key: pass --credentials FILE, or set DIGEST_CREDENTIALS or GOOGLE_APPLICATION_CREDENTIALS")
        }
        let account = try ServiceAccount(contentsOf: credentialsFile)

        var registry: PrometheusCollectorRegistry?
        if metricsPort != nil {
            let prometheus = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: prometheus))
            registry = prometheus
        }

        // Each client's share of the requests (its HTTP/1.1 connections when the endpoint speaks no HTTP/2).
        let clientConfiguration = HTTPClient.Configuration.fcmSender(concurrency: (concurrency + connectionCount - 1) / connectionCount, caFile: caFile)
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: eventLoops)
        // One client a connection: async-http-client keeps one HTTP/2 connection to a host per event loop.
        let client = HTTPClient(eventLoopGroupProvider: .shared(loops), configuration: clientConfiguration)
        let more = (1..<connectionCount).map { _ in HTTPClient(eventLoopGroupProvider: .shared(loops), configuration: clientConfiguration) }
        do {
            try await send(database: database.open(), account: account, client: client, connections: more, registry: registry, logger: logger)
        } catch {
            for client in more { try? await client.shutdown() }
            try? await loops.shutdownGracefully()
            throw error
        }
        for client in more { try? await client.shutdown() }
        try await loops.shutdownGracefully()
    }

    private func send<Database: DigestDatabase>(
        database: Database, account: ServiceAccount, client: HTTPClient, connections: [HTTPClient], registry: PrometheusCollectorRegistry?,
        logger: Logger
    ) async throws {
        var configuration = FCMSender<Database>.Configuration()
        configuration.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        configuration.concurrency = concurrency
        configuration.ratePerMinute = rate == 0 ? nil : rate
        configuration.drain = drain
        configuration.validateOnly = validateOnly
        configuration.leaseSeconds = Int64(leaseSeconds)
        configuration.maxAttempts = maxAttempts
        configuration.retry.timeScale = timeScale
        configuration.pollInterval = .seconds(pollInterval)
        if let owner { configuration.owner = owner }

        let tokens: AccessTokenProvider
        do {
            tokens = try AccessTokenProvider(account: account, client: client, logger: logger)
        } catch {
            try? await client.shutdown()
            throw error
        }
        let sender = FCMSender(
            database: database, account: account, client: client, connections: connections, tokens: tokens,
            configuration: configuration, logger: logger)
        Self.say("sending to \(configuration.endpoint) for project \(account.projectID) as \(configuration.owner), \(concurrency) at once over \(connectionCount) connection\(connectionCount == 1 ? "" : "s"), \(rate == 0 ? "unpaced" : "at most \(rate)/min")\(validateOnly ? " (dry run)" : "")")

        let run = SenderRun(sender: sender)
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: run, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
        ]
        if let metricsPort, let registry {
            let endpoint = MetricsEndpoint(host: metricsHost, port: metricsPort, onBound: { port in
                SendCommand.say("metrics: http://\(metricsHost):\(port)/metrics")
            }) {
                var buffer: [UInt8] = []
                registry.emit(into: &buffer)
                return String(decoding: buffer, as: UTF8.self)
            }
            services.append(.init(service: endpoint))
        }
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [], logger: logger))
        do {
            try await group.run()
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()

        let (summary, error) = run.result
        if let summary { for line in summary.lines() { print(line) } }
        if let error {
            if ExitStatus.of(error) != nil { throw error }
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }
}

extension SendCommand {
    /// Writes a line to stdout at once (print is block-buffered into files and pipes).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

/// Runs the sender inside the service group and keeps its result for the summary.
private final class SenderRun<Database: DigestDatabase>: Service, Sendable {
    let sender: FCMSender<Database>
    private let outcome = Mutex<(SendSummary?, (any Error)?)>((nil, nil))

    init(sender: FCMSender<Database>) { self.sender = sender }

    var result: (SendSummary?, (any Error)?) { outcome.withLock { $0 } }

    func run() async throws {
        do {
            let summary = try await sender.send()
            outcome.withLock { $0 = (summary, nil) }
        } catch {
            outcome.withLock { $0 = (nil, error) }
        }
    }
}
