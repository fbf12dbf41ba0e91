public import AsyncHTTPClient
import DigestCore
import DigestNIO
public import DigestStore
import Foundation
public import Logging
public import NIOCore
public import ServiceLifecycle

/// Delivers the outbox's standard Web Push messages (RFC 8030) to the browsers' push services
/// without Firebase: leases due rows of provider `webpush`, encrypts each row's plaintext to its
/// subscription's keys on every try (RFC 8291, `aes128gcm`), signs with the site's VAPID key (RFC
/// 8292, one token per push service reused for hours), posts it to the subscription's endpoint, and
/// settles it by the answer (docs/016-web-push.md, "Answers").
///
/// It is ``FCMSender``'s run over another transport: the same state machine, leases, pacing,
/// retries, duplicate bound and shutdown. Endpoints are untrusted: only the browsers' push services
/// are contacted unless ``Configuration/allowedHosts`` adds more, and never a non-public address
/// the operator did not list; a message to another host is left untried for later and counted
/// (`HOST_NOT_ALLOWED`). A push service that refuses the key for two subscriptions and accepted none
/// gets nothing more (`VAPID_REFUSED`), while the other services go on.
///
/// ```swift
/// let key = try VAPIDKey(contentsOf: "vapid.pem")
/// var configuration = WebPushSender<SQLiteDatabase>.Configuration(subject: "mailto:push@example.com")
/// let sender = try WebPushSender(database: .sqlite(path: "digest.sqlite"), client: client, key: key,
///                                configuration: configuration, logger: logger)
/// let summary = try await sender.send()
/// ```
public struct WebPushSender<Database: DigestPipelineStore>: Service {
    /// How the sender works.
    public struct Configuration: Sendable {
        /// The VAPID `sub` claim: a `mailto:` address or an `https:` URL where the push services'
        /// operators can reach the site's (not `…@localhost`: Apple refuses it).
        public var subject: String
        /// Hosts (names or IP addresses) that may be contacted beside the browsers' push services;
        /// a non-public address only when listed (itself, or the name that resolves to it).
        public var allowedHosts: [String] = []
        /// Requests in flight at once, over every push service.
        public var concurrency = 1_000
        /// Connections to each push service (HTTP/2 where it offers it, about 100 streams each; over
        /// HTTP/1.1 eight times as many, each carrying one request at a time).
        public var connectionsPerOrigin = 10
        /// At most this many requests in any minute (nil: no limit).
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
        /// Seconds from a VAPID token's signing to its `exp`: 2 to 24 hours.
        public var tokenLifetime: Int64 = 12 * 60 * 60
        /// How long a message to a host not allowed, or to a push service refusing the key, is left
        /// before the sender looks at it again.
        public var notAllowedWait: Duration = .seconds(15 * 60)
        /// How long a message whose refusal (401, 403) is not decided yet waits.
        public var undecidedWait: Duration = .seconds(5 * 60)
        /// The sender's clock in Unix seconds: what is due, leases, retry times, `TTL` and the VAPID
        /// tokens' `exp` follow it.
        public var clock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
        /// The lease owner written to the outbox: host and process by default.
        public var owner = "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"

        public init(subject: String) { self.subject = subject }
    }

    let database: Database
    let configuration: Configuration
    private let client: HTTPClient
    private let logger: Logger
    private let metrics = SenderMetrics(provider: .webpush)
    let transport: WebPushTransport

    /// `client` carries the requests to push services that do not speak HTTP/2 and lends its event
    /// loops; the caller shuts it down. Throws when the subject, the token lifetime or an allowed
    /// host is not usable.
    public init(database: Database, client: HTTPClient, key: VAPIDKey, configuration: Configuration, logger: Logger) throws(SenderError) {
        self.database = database
        self.client = client
        self.configuration = configuration
        self.logger = logger
        let vapid = try VAPIDToken(key: key, subject: configuration.subject, lifetime: configuration.tokenLifetime)
        let policy = try PushHostPolicy(allowing: configuration.allowedHosts)
        self.transport = WebPushTransport(client: client, vapid: vapid, policy: policy, configuration: configuration, metrics: metrics, logger: logger)
    }

    /// VAPID tokens signed so far.
    var tokensIssued: Int { transport.vapid.issued }

    /// `Service`: sends until shut down (or, with `drain`, until done).
    public func run() async throws {
        _ = try await send()
    }

    /// Sends until shut down gracefully (or the task is cancelled) or drained; throws the reason when
    /// the store stops it. Push services refusing the key stop only the messages to them.
    public func send() async throws -> SendSummary {
        let run = SenderRun(
            database: database, transport: transport, owner: configuration.owner, leaseSeconds: configuration.leaseSeconds,
            maxAttempts: configuration.maxAttempts, clock: configuration.clock, metrics: metrics, logger: logger)
        let machine = SenderStateMachine<ContinuousClock.Instant>.Configuration.sender(
            lanes: transport.laneCapacities, concurrency: configuration.concurrency, leaseSeconds: configuration.leaseSeconds,
            leaseBatch: configuration.leaseBatch, maxAttempts: configuration.maxAttempts, pollInterval: configuration.pollInterval,
            drain: configuration.drain, validateOnly: false, retry: configuration.retry, ratePerMinute: configuration.ratePerMinute)
        return try await run.send(machine, on: EventLoopExecutor(client.eventLoopGroup.next()))
    }
}
