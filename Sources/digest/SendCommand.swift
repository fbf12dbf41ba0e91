import ArgumentParser
import AsyncHTTPClient
import DigestCore
import DigestSender
import DigestServer
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

struct SendCommand: AsyncParsableCommand, ShutsDownOnSignals {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Deliver due outbox messages to Firebase Cloud Messaging (HTTP v1), to APNs directly and to browsers by standard Web Push.",
        discussion: """
            Leases due messages, posts each to {endpoint}/v1/projects/{project}/messages:send with an \
            OAuth token (from a service-account key, or from the GCE/GKE metadata server with --credentials \
            metadata), and settles it by FCM's answer: sent (with FCM's message \
            name); UNREGISTERED → dead and the token remembered as dead; INVALID_ARGUMENT, SENDER_ID_MISMATCH → dead; \
            429 → retried after at least a minute (its Retry-After also holds every connection); 500/503 → retried after Retry-After with exponential \
            backoff and jitter; THIRD_PARTY_AUTH_ERROR or refused credentials → stops with the reason. \
            Requests are spread over several HTTP/2 connections and paced to --rate in any minute; those a GOAWAY \
            left unprocessed are sent again at once. \
            APNs messages (devices with provider apns) go straight to Apple with --apns-key-file, --apns-key-id, \
            --apns-team-id and --apns-topic: a provider token signed with the key (ES256, renewed every 50 minutes), \
            settled by APNs' answer (docs/007). \
            Web Push messages (subscriptions with provider webpush) go to each subscription's push service with \
            --vapid-key-file and --vapid-subject: encrypted to the subscription (RFC 8291), signed with the key \
            (VAPID, RFC 8292); only the browsers' push services are contacted unless --allow-push-hosts adds more \
            (docs/016). One sender delivers every provider it has credentials for; messages \
            of the others stay as they are and are counted. \
            SIGTERM (or Ctrl-C) finishes the requests in flight, releases the other leases and exits 0. \
            With --metrics-port, GET /metrics answers Prometheus text and GET /healthz 200 "ok" while \
            sending with a valid access token (503 "unavailable" otherwise, with the reason).
            """)

    @OptionGroup var database: DatabaseOptions
    /// The credentials and endpoints of each provider (shared with `send-test` and `serve`).
    @OptionGroup var providers: ProviderOptions

    @Option(help: "Requests in flight at once, spread over --connections (the default reaches FCM's default quota up to about 120 ms of latency; over HTTP/1.1 at most --connections).")
    var concurrency = 1_200

    @Option(help: "Connections to FCM (default: one per 100 of --concurrency; FCM allows 100 HTTP/2 streams a connection; over HTTP/1.1 each carries one request at a time).")
    var connections: Int?

    @Option(help: "At most this many requests in any minute: FCM's default quota of a project; split it between senders of one project (0: unpaced).")
    var rate = 600_000

    /// `--connections`, else one per 100 requests in flight.
    var connectionCount: Int { connections ?? (concurrency + 99) / 100 }

    @Flag(help: "Exit once nothing due is ready, waiting for a retry, or leased.")
    var drain = false

    @Flag(help: "FCM's dry run: validate every due message, deliver and change nothing.")
    var validateOnly = false

    @Option(help: "Serve /metrics (Prometheus text) and /healthz on this port of --metrics-host (0: any free port).")
    var metricsPort: Int?

    @Option(help: "The address /metrics and /healthz listen on.")
    var metricsHost = "127.0.0.1"

    @Option(help: "Seconds a lease holds (extended while the message is held).")
    var leaseSeconds = 60

    @Option(help: "A message that failed this many times is dead.")
    var maxAttempts = 12

    @Option(help: "APNs requests in flight at once, spread over --apns-connections.")
    var apnsConcurrency = 1_200

    @Option(help: "HTTP/2 connections to APNs (default: one per 100 of --apns-concurrency; each carries one request until its first is accepted, then at most the server's streams).")
    var apnsConnections: Int?

    @Option(help: "Web Push requests in flight at once, over every push service.")
    var webpushConcurrency = 1_000

    @Option(help: "Connections to each push service (default: one per 100 of --webpush-concurrency; HTTP/2 where offered, else HTTP/1.1 with eight times as many, each carrying one request at a time).")
    var webpushConnections: Int?

    /// `--webpush-connections`, else one per 100 requests in flight (push services allow about 100
    /// streams a connection).
    var webpushConnectionCount: Int { webpushConnections ?? (webpushConcurrency + 99) / 100 }

    /// `--apns-connections`, else one per 100 requests in flight.
    var apnsConnectionCount: Int { apnsConnections ?? (apnsConcurrency + 99) / 100 }

    @Option(help: "Threads of the HTTP client (its event loops).")
    var eventLoops = HTTPClient.Configuration.pushSenderEventLoops

    func validate() throws {
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be positive") }
        guard rate >= 0 else { throw ValidationError("--rate must not be negative (0: unpaced)") }
        if let connections { guard (1...concurrency).contains(connections) else { throw ValidationError("--connections must be between 1 and --concurrency") } }
        // A lease must outlive a request (30 s timeout), or the sender's own lease could lapse mid-request.
        guard leaseSeconds >= 45 else { throw ValidationError("--lease-seconds must be at least 45") }
        guard maxAttempts >= 1 else { throw ValidationError("--max-attempts must be positive") }
        guard eventLoops >= 1 else { throw ValidationError("--event-loops must be positive") }
        guard apnsConcurrency >= 1 else { throw ValidationError("--apns-concurrency must be positive") }
        if let apnsConnections { guard (1...apnsConcurrency).contains(apnsConnections) else { throw ValidationError("--apns-connections must be between 1 and --apns-concurrency") } }
        if providers.apnsKeyFile != nil, validateOnly {
            throw ValidationError("APNs has no dry run: --validate-only checks FCM messages only; leave out --apns-key-file")
        }
        if providers.vapidKeyFile != nil, validateOnly {
            throw ValidationError("Web Push has no dry run: --validate-only checks FCM messages only; leave out --vapid-key-file")
        }
        guard webpushConcurrency >= 1 else { throw ValidationError("--webpush-concurrency must be positive") }
        if let webpushConnections, !(1...webpushConcurrency).contains(webpushConnections) {
            throw ValidationError("--webpush-connections must be between 1 and --webpush-concurrency")
        }
    }

    func run() async throws {
        try await sendAll()
    }

    private func sendAll() async throws {
        let logger = Logger(label: "digest.send")
        // Every key file is read and checked before anything else starts.
        let fcmChoice = providers.credentialsChoice
        let apnsKey = try providers.apnsSigningKey()
        let vapidKey = try providers.vapidKeyFile.map { try VAPIDKey(contentsOf: $0) }
        guard fcmChoice != nil || apnsKey != nil || vapidKey != nil else {
            throw SenderError(
                .credentials,
                "no credentials: pass --credentials FILE (a service-account key) or --credentials metadata for FCM (or set DIGEST_CREDENTIALS or GOOGLE_APPLICATION_CREDENTIALS), and/or --apns-key-file with --apns-key-id, --apns-team-id and --apns-topic for APNs, and/or --vapid-key-file with --vapid-subject for Web Push")
        }
        var account: ServiceAccount?
        if case .file(let path) = fcmChoice { account = try ServiceAccount(contentsOf: path) }

        var registry: PrometheusCollectorRegistry?
        if metricsPort != nil {
            let prometheus = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: prometheus))
            registry = prometheus
        }

        let loops = MultiThreadedEventLoopGroup(numberOfThreads: eventLoops)
        // Web Push encrypts every message (a key agreement each) on its requests' event loops: they
        // get loops of their own, one per core (at least --event-loops), so that work is not held to
        // one thread beside the other providers' I/O.
        let webLoops = providers.vapidKeyFile == nil
            ? nil : MultiThreadedEventLoopGroup(numberOfThreads: max(eventLoops, System.coreCount))
        var clients: [HTTPClient] = []
        do {
            try await self.database.withStore { database in
                var runs: [ProviderRun] = []
                if let fcmChoice {
                    // Each client's share of the requests (over HTTP/1.1 the sender uses one of its connections at a time).
                    let configuration = HTTPClient.Configuration.pushSender(concurrency: (concurrency + connectionCount - 1) / connectionCount, caFile: providers.caFile)
                    // One client a connection (a lane): over https the sender opens its own HTTP/2 connection for
                    // each; the client carries what that cannot (plain http, a server without h2) and keeps one
                    // HTTP/2 connection to a host per event loop.
                    let client = HTTPClient(eventLoopGroupProvider: .shared(loops), configuration: configuration)
                    let more = (1..<connectionCount).map { _ in HTTPClient(eventLoopGroupProvider: .shared(loops), configuration: configuration) }
                    clients += [client] + more
                    var metadataClient: HTTPClient?
                    if fcmChoice == .metadata {
                        metadataClient = HTTPClient(eventLoopGroupProvider: .shared(loops), configuration: .metadataServer())
                        clients.append(metadataClient!)
                    }
                    let (tokens, projectID) = try await providers.tokens(
                        account: account, client: client, metadataClient: metadataClient, logger: logger)
                    runs.append(fcmRun(database: database, projectID: projectID, tokens: tokens, client: client, connections: more, logger: logger))
                }
                if let apnsKey {
                    // APNs' requests go over the sender's own HTTP/2 connections; the client lends its event loops.
                    let client = HTTPClient(
                        eventLoopGroupProvider: .shared(loops), configuration: .pushSender(concurrency: 1, caFile: providers.caFile))
                    clients.append(client)
                    runs.append(try apnsRun(database: database, key: apnsKey, client: client, logger: logger))
                }
                if let vapidKey {
                    // Push services that speak HTTP/2 get the sender's own connections; the client carries
                    // the others' HTTP/1.1 requests (8 connections for each of a service's --webpush-connections).
                    let client = HTTPClient(
                        eventLoopGroupProvider: .shared(webLoops ?? loops),
                        configuration: .pushSender(concurrency: 8 * webpushConnectionCount, caFile: providers.caFile))
                    clients.append(client)
                    runs.append(try webPushRun(database: database, key: vapidKey, client: client, logger: logger))
                }
                try await run(runs, database: database, registry: registry, logger: logger)
            }
        } catch {
            for client in clients { try? await client.shutdown() }
            try? await loops.shutdownGracefully()
            try? await webLoops?.shutdownGracefully()
            throw error
        }
        for client in clients { try? await client.shutdown() }
        try await loops.shutdownGracefully()
        try await webLoops?.shutdownGracefully()
    }

    /// FCM's sender, with the command's settings.
    private func fcmRun<Database: DigestDatabase>(
        database: Database, projectID: String, tokens: AccessTokenProvider, client: HTTPClient, connections: [HTTPClient], logger: Logger
    ) -> ProviderRun {
        var fcm = FCMTransport.Configuration()
        fcm.endpoint = providers.fcmBaseURL
        fcm.validateOnly = validateOnly
        let configuration: PushSender<Database>.Configuration = senderConfiguration(concurrency: concurrency, ratePerMinute: rate == 0 ? nil : rate)
        let sender = PushSender(
            database: database, fcm: fcm, projectID: projectID, tokens: tokens, client: client, connections: connections,
            configuration: configuration, logger: logger)
        Self.say("sending to \(fcm.endpoint) for project \(projectID) as \(configuration.owner) with \(tokens.principal), \(concurrency) at once over \(connectionCount) connection\(connectionCount == 1 ? "" : "s"), \(rate == 0 ? "unpaced" : "at most \(rate)/min")\(validateOnly ? " (dry run)" : "")")
        return ProviderRun(sender) {
            let status = tokens.status()
            var credentials: String
            if let left = status.secondsLeft {
                credentials = "token valid for \(left) s"
            } else {
                credentials = status.lastFailure == nil ? "no token yet" : "no valid token"
            }
            if let failure = status.lastFailure { credentials += "; last refresh failed: \(failure)" }
            return (status.isUsable, "\(credentials) (\(tokens.principal))")
        }
    }

    /// APNs' sender, with the command's settings: no pacing (Apple publishes no quota); the requests
    /// in flight and connections of its own flags.
    private func apnsRun<Database: DigestDatabase>(
        database: Database, key: APNsSigningKey, client: HTTPClient, logger: Logger
    ) throws -> ProviderRun {
        var apns = APNsTransport.Configuration()
        apns.endpoint = providers.apnsBaseURL
        apns.topic = providers.apnsTopic
        apns.connections = apnsConnectionCount
        let configuration: PushSender<Database>.Configuration = senderConfiguration(concurrency: apnsConcurrency, ratePerMinute: nil)
        let sender = try PushSender(database: database, apns: apns, key: key, client: client, configuration: configuration, logger: logger)
        Self.say("sending to \(apns.endpoint) with key \(key.keyID) of team \(key.teamID) as \(configuration.owner), topic \(providers.apnsTopic ?? "from each device"), \(apnsConcurrency) at once over \(apnsConnectionCount) connection\(apnsConnectionCount == 1 ? "" : "s"), unpaced")
        let line = "key \(key.keyID) of team \(key.teamID) (provider tokens signed here)"
        return ProviderRun(sender) { (true, line) }
    }

    /// The Web Push sender, with the command's settings: unpaced (push services publish no quota;
    /// their 429s are honoured), the hosts it may contact.
    private func webPushRun<Database: DigestDatabase>(
        database: Database, key: VAPIDKey, client: HTTPClient, logger: Logger
    ) throws -> ProviderRun {
        var webPush = WebPushTransport.Configuration(subject: providers.vapidSubject ?? "")
        webPush.allowedHosts = providers.allowedPushHosts
        webPush.connectionsPerOrigin = webpushConnectionCount
        let configuration: PushSender<Database>.Configuration = senderConfiguration(concurrency: webpushConcurrency, ratePerMinute: nil)
        let sender = try PushSender(database: database, webPush: webPush, key: key, client: client, configuration: configuration, logger: logger)
        let extra = webPush.allowedHosts.isEmpty ? "" : " and \(webPush.allowedHosts.joined(separator: ", "))"
        Self.say("sending Web Push as \(configuration.owner) with VAPID key \(key.publicKey.prefix(12))… for \(webPush.subject), to the browsers' push services\(extra), \(webpushConcurrency) at once, \(webpushConnectionCount) connection\(webpushConnectionCount == 1 ? "" : "s") a service, unpaced")
        let line = "VAPID key \(key.publicKey.prefix(12))… (tokens signed here)"
        return ProviderRun(sender) { (true, line) }
    }

    /// Every provider's sender settings from the same flags (`--drain`, `--lease-seconds`,
    /// `--max-attempts`, `--ca-file`), with the provider's requests in flight and pace.
    func senderConfiguration<Database: DigestPipelineStore>(concurrency: Int, ratePerMinute: Int?) -> PushSender<Database>.Configuration {
        var configuration = PushSender<Database>.Configuration()
        configuration.concurrency = concurrency
        configuration.ratePerMinute = ratePerMinute
        configuration.drain = drain
        configuration.leaseSeconds = Int64(leaseSeconds)
        configuration.maxAttempts = maxAttempts
        configuration.caFile = providers.caFile
        return configuration
    }

    /// Runs each provider's sender in one service group (with `/metrics` and `/healthz` when asked)
    /// until every one has ended (drained), one failed (the others are then cancelled), or
    /// SIGTERM; prints each one's summary and how many messages of the providers not sent wait.
    private func run<Database: DigestDatabase>(
        _ runs: [ProviderRun], database: Database, registry: PrometheusCollectorRegistry?, logger: Logger
    ) async throws {
        let sent = Set(runs.map(\.provider))
        let others = Set(Provider.allCases).subtracting(sent)
        try await sayWaiting(others, database: database)
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: Senders(runs: runs), successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
        ]
        if let metricsPort, let registry {
            let endpoint = OperatorEndpoint(
                configuration: .init(host: metricsHost, port: metricsPort), logger: logger,
                health: { ProviderRun.health(runs) }
            ) {
                var buffer: [UInt8] = []
                registry.emit(into: &buffer)
                return String(decoding: buffer, as: UTF8.self)
            }
            services.append(.init(service: OperatorService(endpoint: endpoint)))
        }
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [], logger: logger))
        try await group.run()

        for run in runs {
            guard let summary = run.result.0 else { continue }
            if runs.count == 1 {
                for line in summary.lines() { print(line) }
            } else {
                print("\(run.provider.displayName):")
                for line in summary.lines() { print("  " + line) }
            }
        }
        if drain { try await sayWaiting(others, database: database) }
        let errors = runs.compactMap { $0.result.1 }
        if let error = errors.first(where: { ExitStatus.of($0) != nil }) { throw error }
        if let error = errors.first {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }

    /// Says how many messages of `providers` (those this sender has no credentials for) are left as
    /// they are, if any.
    private func sayWaiting<Database: DigestDatabase>(_ providers: Set<Provider>, database: Database) async throws {
        guard !providers.isEmpty else { return }
        let now = Int64(Date().timeIntervalSince1970)
        for provider in providers.sorted(by: { $0.rawValue < $1.rawValue }) {
            let backlog = try await database.withOutboxConsumer { try await $0.backlog(now: now, providers: [provider]) }
            let count = backlog.due + backlog.retrying + backlog.waiting + backlog.leased
            guard count > 0 else { continue }
            Self.say("\(provider.rawValue): \(count) message\(count == 1 ? "" : "s") (\(backlog.due) due) left as they are: no \(provider.credentialsHint) given")
        }
    }
}

extension Provider {
    /// How people write its name.
    var displayName: String {
        switch self {
        case .fcm: "FCM"
        case .apns: "APNs"
        case .webpush: "Web Push"
        }
    }

    /// The flags that give `digest send` its credentials.
    var credentialsHint: String {
        switch self {
        case .fcm: "--credentials"
        case .apns: "--apns-key-file (with --apns-key-id, --apns-team-id, --apns-topic)"
        case .webpush: "--vapid-key-file (with --vapid-subject)"
        }
    }
}

extension SendCommand {
    /// Writes a line to stdout at once (print is block-buffered into files and pipes).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

/// The `/metrics` and `/healthz` application; failing to listen (the port taken, the address not
/// this machine's) is a configuration error: exit 78, not a restart loop.
private struct OperatorService: Service {
    let endpoint: OperatorEndpoint

    func run() async throws {
        let host = endpoint.configuration.host
        do {
            try await endpoint.run { port in
                SendCommand.say("metrics: http://\(host):\(port)/metrics")
                SendCommand.say("health: http://\(host):\(port)/healthz")
            }
        } catch {
            throw SenderError(.configuration, "cannot serve /metrics and /healthz: \(error)", context: "\(host):\(endpoint.configuration.port)")
        }
    }
}

/// One provider's sender: keeps its result for the summary and `/healthz`.
private final class ProviderRun: Service, Sendable {
    enum Phase: String { case starting, sending, stopping, stopped }

    let provider: Provider
    private let send: @Sendable () async throws -> SendSummary
    /// Whether its credentials can authenticate requests now, and a line saying why.
    let credentials: @Sendable () -> (usable: Bool, line: String)
    private let outcome = Mutex<(SendSummary?, (any Error)?)>((nil, nil))
    private let phase = Mutex(Phase.starting)

    init<Database>(_ sender: PushSender<Database>, credentials: @escaping @Sendable () -> (usable: Bool, line: String)) {
        self.provider = sender.provider
        self.send = { try await sender.send() }
        self.credentials = credentials
    }

    var result: (SendSummary?, (any Error)?) { outcome.withLock { $0 } }
    var failed: Bool { outcome.withLock { $0.1 != nil } }

    func run() async {
        phase.withLock { $0 = .sending }
        defer { phase.withLock { $0 = .stopped } }
        await withGracefulShutdownHandler {
            do {
                let summary = try await send()
                outcome.withLock { $0 = (summary, nil) }
            } catch {
                outcome.withLock { $0 = (nil, error) }
            }
        } onGracefulShutdown: {
            self.phase.withLock { $0 = .stopping }
        }
    }

    /// Ready while every sender is sending with usable credentials. The store has no check of its
    /// own: a sender stops at its first store error, so a sending sender's last store call worked.
    /// One sender: `sender` and `credentials` lines; several: one of each per provider.
    static func health(_ runs: [ProviderRun]) -> OperatorEndpoint.Health {
        var ready = true
        var checks: [OperatorEndpoint.Health.Check] = []
        for run in runs {
            let phase = run.phase.withLock { $0 }
            let credentials = run.credentials()
            var sender = phase.rawValue
            if phase == .stopped, let error = run.outcome.withLock({ $0.1 }) { sender += ": \(error)" }
            ready = ready && phase == .sending && credentials.usable
            let suffix = runs.count == 1 ? "" : " (\(run.provider.rawValue))"
            checks.append(.init("sender" + suffix, sender))
            checks.append(.init("credentials" + suffix, credentials.line))
        }
        return .init(isReady: ready, checks: checks)
    }
}

/// Every provider's sender at once, as one service: it ends once every sender has ended (drained,
/// or stopped by SIGTERM, which reaches them all at once). When one fails (its credentials refused,
/// the store unavailable) the others are cancelled: their requests in flight end at once and count
/// as tries, their leases are released, and the command exits with the failure's status.
private struct Senders: Service {
    let runs: [ProviderRun]

    func run() async {
        await withTaskGroup(of: Void.self) { group in
            for run in runs { group.addTask { await run.run() } }
            for await _ in group where runs.contains(where: \.failed) { group.cancelAll() }
        }
    }
}
