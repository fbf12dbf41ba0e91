public import AsyncHTTPClient
import CoreMetrics
import DigestCore
import DigestNIO
public import DigestStore
import Foundation
public import Logging
public import NIOCore
public import ServiceLifecycle

/// The reference outbox consumer: leases due messages, posts each to FCM HTTP v1
/// (`{endpoint}/v1/projects/{project_id}/messages:send`) with a bounded number in flight, and settles
/// each by FCM's answer (docs/007-rules-and-limits.md, "FCM errors and what the sender does").
///
/// Requests are spread over several lanes, one HTTP/2 connection each (over `https`, the sender's own
/// connection driven at the frame level, ``HTTP2Exchange``; else one client of ``connections``): FCM
/// allows 100 concurrent streams a connection and answers in tens of milliseconds, so one connection
/// carries at most about 100 / latency messages a second (1,250 at 80 ms) and the default quota of
/// 10,000 a second needs about ten. Over HTTP/1.1 (a plain `http` endpoint, a server without `h2`) a
/// connection carries one request at a time: one per lane. A request's deadline
/// (``Configuration/requestTimeout``) counts from when it is written. Sends are paced to
/// ``Configuration/ratePerMinute``.
///
/// A `Service`: on graceful shutdown (SIGTERM in a `ServiceGroup`), or when its task is cancelled, it
/// sends nothing new, lets the requests in flight finish and be settled, releases the leases it still
/// holds, and returns (cancelled, the requests in flight end at once and count as tries).
///
/// ```swift
/// let sender = FCMSender(database: .sqlite(path: "digest.sqlite"), account: account, client: client,
///                        tokens: tokens, configuration: .init(), logger: logger)
/// let summary = try await sender.send()
/// ```
public struct FCMSender<Database: DigestPipelineStore>: Service {
    /// How the sender works.
    public struct Configuration: Sendable {
        /// FCM's base URL; the fake server's in tests.
        public var endpoint = "https://fcm.googleapis.com"
        /// Requests in flight at once, spread evenly over the connections: keep each connection's share
        /// at most the server's SETTINGS_MAX_CONCURRENT_STREAMS (FCM's: 100). The default, 12 connections
        /// of 100, reaches FCM's default quota (10,000 a second) up to about 120 ms of latency. Over
        /// HTTP/1.1 each connection carries one request at a time, whatever this says.
        public var concurrency = 1_200
        /// At most this many requests in any minute (nil: no limit). The default is FCM's default quota
        /// for a project, 600,000 a minute; several senders of one project share it.
        public var ratePerMinute: Int? = 600_000
        /// Return once nothing due is ready, waiting for a retry, or leased.
        public var drain = false
        /// FCM's dry run (`validate_only`): check every due message, deliver and change nothing.
        public var validateOnly = false
        /// How long a lease holds; held leases are extended every third of it. Keep it well above
        /// `requestTimeout`: a lease must outlive the slowest request.
        public var leaseSeconds: Int64 = 60
        /// Messages leased at once (default: twice the concurrency).
        public var leaseBatch: Int?
        /// A message that failed this many times is `dead`.
        public var maxAttempts = 12
        /// Pause between looks at an empty outbox.
        public var pollInterval: Duration = .seconds(1)
        /// One request's deadline, from when it is written: waiting for a connection or a stream does
        /// not count.
        public var requestTimeout: TimeAmount = .seconds(30)
        /// Over `https`, post on the sender's own HTTP/2 connections, one per client, driven at the
        /// frame level (no per-request stream channel or HTTP/1 codec); the clients then carry only
        /// what such a connection cannot (a server that does not choose `h2`). False: every request
        /// through the clients, which choose the protocol themselves: over `https` the sender then
        /// cannot tell HTTP/1.1 from HTTP/2 and does not hold each connection to one request.
        public var ownHTTP2Connections = true
        /// A PEM file of extra trusted CA certificates for the sender's own connections (give the
        /// clients the same).
        public var caFile: String?
        public var retry = RetryPolicy()
        /// The sender's clock in Unix seconds: what is due, leases, retry times (`Retry-After` dates
        /// included), holds and expiry all follow it (tests set a fixed instant). Nothing else in the
        /// sender reads the calendar; waits within a run (pacing, the quota hold) use a monotonic clock.
        public var clock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
        /// The lease owner written to the outbox: host and process by default.
        public var owner = "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"

        public init() {}
    }

    public let database: Database
    /// The Firebase project messages are sent for.
    public let projectID: String
    public let configuration: Configuration
    private let client: HTTPClient
    private let logger: Logger
    private let metrics = SenderMetrics(provider: .fcm)
    let transport: FCMTransport

    /// `client` fetches access tokens and carries requests; `connections` are more clients on the same
    /// event loops to spread requests over (one HTTP/2 connection each; the caller shuts them down).
    public init(database: Database, projectID: String, client: HTTPClient, connections: [HTTPClient] = [],
                tokens: AccessTokenProvider, configuration: Configuration, logger: Logger) {
        self.database = database
        self.projectID = projectID
        self.client = client
        self.configuration = configuration
        self.logger = logger
        self.transport = FCMTransport(
            projectID: projectID, client: client, connections: connections, tokens: tokens, configuration: configuration, metrics: metrics)
    }

    /// For the project of a service-account key.
    public init(database: Database, account: ServiceAccount, client: HTTPClient, connections: [HTTPClient] = [],
                tokens: AccessTokenProvider, configuration: Configuration, logger: Logger) {
        self.init(
            database: database, projectID: account.projectID, client: client, connections: connections, tokens: tokens,
            configuration: configuration, logger: logger)
    }

    /// `Service`: sends until shut down (or, with `drain`, until done).
    public func run() async throws {
        _ = try await send()
    }

    /// Sends until shut down gracefully (or the task is cancelled) or drained; throws the reason when
    /// FCM, the credentials or the store stop it.
    ///
    /// ``SenderStateMachine`` decides; ``SenderDriver`` carries out its actions on the store's outbox
    /// consumer (whose calls run one at a time, in order) and on ``FCMTransport``. A message counts as
    /// in flight from its request until its outcome is written, so a sender killed at any moment has
    /// delivered without recording at most what it had in flight.
    public func send() async throws -> SendSummary {
        let run = SenderRun(
            database: database, transport: transport, owner: configuration.owner, leaseSeconds: configuration.leaseSeconds,
            maxAttempts: configuration.maxAttempts, clock: configuration.clock, metrics: metrics, logger: logger)
        return try await run.send(machineConfiguration, on: EventLoopExecutor(client.eventLoopGroup.next()))
    }

    /// The state machine's settings, from the sender's.
    var machineConfiguration: SenderStateMachine<ContinuousClock.Instant>.Configuration {
        .sender(
            lanes: transport.laneCapacities, concurrency: configuration.concurrency, leaseSeconds: configuration.leaseSeconds,
            leaseBatch: configuration.leaseBatch, maxAttempts: configuration.maxAttempts, pollInterval: configuration.pollInterval,
            drain: configuration.drain, validateOnly: configuration.validateOnly, retry: configuration.retry,
            ratePerMinute: configuration.ratePerMinute)
    }
}
