public import AsyncHTTPClient
import DigestCore
import DigestNIO
public import DigestStore
import Foundation
public import Logging
public import NIOCore
public import ServiceLifecycle

/// Delivers the outbox's APNs messages straight to Apple: leases due rows of provider `apns`, posts
/// each to `{endpoint}/3/device/{token}` with its headers and a provider token signed with the
/// team's key (ES256, renewed every 50 minutes, never sooner than 20), and settles it by APNs' answer
/// (docs/007-rules-and-limits.md, "APNs answers and what the sender does").
///
/// It is ``FCMSender``'s run over another transport: the same state machine, leases, pacing,
/// retries, duplicate bound and shutdown. Requests go over ``Configuration/connections`` HTTP/2
/// connections kept open, each carrying one request until its first is accepted and then at most
/// the server's `SETTINGS_MAX_CONCURRENT_STREAMS`. When the run's first 20 answers are all
/// `BadDeviceToken`, the tokens are of the other environment (sandbox or production): it stops
/// with a ``SenderError`` and marks no device dead. A refusal of the key, team or topic stops it too,
/// with the leases released. APNs has no dry run: there is no `validateOnly`.
///
/// ```swift
/// let key = try APNsSigningKey(contentsOf: "AuthKey_ABCDE12345.p8", keyID: "ABCDE12345", teamID: "TEAM123456")
/// var configuration = APNsSender<SQLiteDatabase>.Configuration()
/// configuration.topic = "com.example.reader"
/// let sender = APNsSender(database: .sqlite(path: "digest.sqlite"), client: client, key: key,
///                         configuration: configuration, logger: logger)
/// let summary = try await sender.send()
/// ```
public struct APNsSender<Database: DigestPipelineStore>: Service {
    /// How the sender works.
    public struct Configuration: Sendable {
        /// APNs' base URL: production; the sandbox is `https://api.sandbox.push.apple.com`.
        public var endpoint = "https://api.push.apple.com"
        /// `apns-topic` (the app's bundle id) of a message whose row names none.
        public var topic: String?
        /// Requests in flight at once, spread evenly over the connections (each carries at most the
        /// server's streams; the others wait for one).
        public var concurrency = 1_200
        /// HTTP/2 connections to APNs (Apple allows several; rapid reconnects it takes for an attack).
        public var connections = 12
        /// At most this many requests in any minute (nil: no limit; Apple publishes no quota).
        public var ratePerMinute: Int?
        /// Return once nothing due is ready, waiting for a retry, or leased.
        public var drain = false
        /// How long a lease holds; held leases are extended every third of it.
        public var leaseSeconds: Int64 = 60
        /// Messages leased at once (default: twice the concurrency).
        public var leaseBatch: Int?
        /// A message that failed this many times is `dead`.
        public var maxAttempts = 12
        /// Pause between looks at an empty outbox.
        public var pollInterval: Duration = .seconds(1)
        /// One request's deadline, from when it is written.
        public var requestTimeout: TimeAmount = .seconds(30)
        /// How long a connection (TCP and TLS) may take to open; a connection not open by then fails
        /// the requests waiting for it, which are tried again (an attempt each).
        package var connectTimeout: TimeAmount = .seconds(5)
        /// A PEM file of extra trusted CA certificates (a test server).
        public var caFile: String?
        public var retry = RetryPolicy()
        /// The provider token is renewed once it is this old: at least 20 minutes, under 60.
        public var tokenRenewal: Duration = .seconds(50 * 60)
        /// The sender's clock in Unix seconds: what is due, leases, retry times and the provider
        /// token's `iat` and age follow it.
        public var clock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
        /// The lease owner written to the outbox: host and process by default.
        public var owner = "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"

        public init() {}
    }

    let database: Database
    let configuration: Configuration
    private let client: HTTPClient
    private let logger: Logger
    private let metrics = SenderMetrics(provider: .apns)
    let transport: APNsTransport

    /// `client` carries what an own HTTP/2 connection cannot (nothing, against APNs) and lends its
    /// event loops; the caller shuts it down. Throws when `configuration.tokenRenewal` is out of range.
    public init(database: Database, client: HTTPClient, key: APNsSigningKey, configuration: Configuration, logger: Logger) throws(SenderError) {
        self.database = database
        self.client = client
        self.configuration = configuration
        self.logger = logger
        let tokens = try APNsProviderToken(key: key, renewAfter: Int64(configuration.tokenRenewal.seconds))
        self.transport = APNsTransport(client: client, tokens: tokens, configuration: configuration, metrics: metrics)
    }

    /// Provider tokens signed so far (one per process and renewal).
    var providerTokensIssued: Int { transport.tokens.issued }

    /// `Service`: sends until shut down (or, with `drain`, until done).
    public func run() async throws {
        _ = try await send()
    }

    /// Sends until shut down gracefully (or the task is cancelled) or drained; throws the reason when
    /// APNs (the key, the topic, the environment) or the store stop it.
    public func send() async throws -> SendSummary {
        let run = SenderRun(
            database: database, transport: transport, owner: configuration.owner, leaseSeconds: configuration.leaseSeconds,
            maxAttempts: configuration.maxAttempts, clock: configuration.clock, metrics: metrics, logger: logger)
        return try await run.send(machineConfiguration, on: EventLoopExecutor(client.eventLoopGroup.next()))
    }

    /// The state machine's settings, from the sender's: the wrong-environment check on.
    var machineConfiguration: SenderStateMachine<ContinuousClock.Instant>.Configuration {
        var machine = SenderStateMachine<ContinuousClock.Instant>.Configuration.sender(
            lanes: transport.laneCapacities, concurrency: configuration.concurrency, leaseSeconds: configuration.leaseSeconds,
            leaseBatch: configuration.leaseBatch, maxAttempts: configuration.maxAttempts, pollInterval: configuration.pollInterval,
            drain: configuration.drain, validateOnly: false, retry: configuration.retry, ratePerMinute: configuration.ratePerMinute)
        machine.environmentCheck = .init(answers: 20, error: transport.wrongEnvironment)
        return machine
    }
}
