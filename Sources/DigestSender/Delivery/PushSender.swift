import AsyncHTTPClient
import CoreMetrics
public import DigestCore
import DigestNIO
public import DigestStore
import Foundation
import Logging
public import NIOCore
public import ServiceLifecycle

/// The outbox consumer of every provider: leases the due rows of its provider, tries each over the
/// provider's transport with a bounded number in flight, paced, and settles each by the provider's
/// answer (docs/007-rules-and-limits.md). One sender sends for one provider; `digest send` runs one per
/// provider it has credentials for.
///
/// A provider is its transport (its request, its table of answers, its credentials): FCM HTTP v1
/// (``FCMTransport``), APNs (``APNsTransport``) and Web Push (``WebPushTransport``), each with its own
/// settings and an initializer of this type beside it. What is the same for every provider (leases,
/// pacing, retries, the duplicate bound, shutdown) is ``Configuration`` and one run:
/// ``SenderStateMachine`` decides, ``SenderDriver`` carries out its actions on the store's outbox
/// consumer (whose calls run one at a time, in order) and on the transport. A message counts as in
/// flight from its request until its outcome is written, so a sender killed at any moment has
/// delivered without recording at most what it had in flight.
///
/// A `Service`: on graceful shutdown (SIGTERM in a `ServiceGroup`), or when its task is cancelled, it
/// sends nothing new, lets the requests in flight finish and be settled, releases the leases it still
/// holds, and returns (cancelled, the requests in flight end at once and count as tries).
///
/// ```swift
/// let sender = PushSender(database: .sqlite(path: "digest.sqlite"), fcm: .init(), projectID: account.projectID,
///                         tokens: tokens, client: client, configuration: .init(), logger: logger)
/// let summary = try await sender.send()
/// ```
public struct PushSender<Database: DigestPipelineStore>: Service {
    /// How the sender works, whatever its provider.
    public struct Configuration: Sendable {
        /// Requests in flight at once, spread evenly over the connections: keep each connection's share
        /// at most the server's SETTINGS_MAX_CONCURRENT_STREAMS (FCM's and APNs': 100). Over HTTP/1.1 a
        /// connection carries one request at a time, whatever this says.
        public var concurrency = 1_200
        /// At most this many requests in any minute (nil: no limit). FCM's default quota for a project
        /// is 600,000 a minute, shared by its senders; APNs and the push services publish none.
        public var ratePerMinute: Int?
        /// Return once nothing due is ready, waiting for a retry, or leased.
        public var drain = false
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
        /// How long a connection (TCP and TLS) may take to open; a connection not open by then fails
        /// the requests waiting for it, which are tried again (an attempt each).
        package var connectTimeout: TimeAmount = .seconds(5)
        /// A PEM file of extra trusted CA certificates for the sender's own connections (give the
        /// client the same).
        public var caFile: String?
        public var retry = RetryPolicy()
        /// The sender's clock in Unix seconds: what is due, leases, retry times (`Retry-After` dates
        /// included), holds, expiry and the credentials' times all follow it (tests set a fixed
        /// instant). Nothing else in the sender reads the calendar; waits within a run (pacing, the
        /// quota hold) use a monotonic clock.
        public var clock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
        /// The lease owner written to the outbox: host and process by default.
        public var owner = "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"

        public init() {}
    }

    public let database: Database
    public let configuration: Configuration
    let transport: any PushTransport
    /// Where the run's loop and store tasks run: an event loop of the client.
    private let control: EventLoopExecutor
    private let logger: Logger

    /// A sender over `transport`, which the provider's initializer made with `configuration`.
    init(database: Database, transport: any PushTransport, client: HTTPClient, configuration: Configuration, logger: Logger) {
        self.database = database
        self.transport = transport
        self.control = EventLoopExecutor(client.eventLoopGroup.next())
        self.configuration = configuration
        self.logger = logger
    }

    /// The provider whose rows it sends.
    public var provider: Provider { transport.provider }

    /// `Service`: sends until shut down (or, with `drain`, until done).
    public func run() async throws {
        _ = try await send()
    }

    /// Sends until shut down gracefully (or the task is cancelled) or drained; throws the reason when
    /// the provider (the credentials, the environment), or the store, stop it.
    public func send() async throws -> SendSummary {
        try await send(over: transport)
    }

    /// Sends `message` once, outside the outbox (`digest send-test`): no lease, no retry.
    public func deliverOnce(_ message: LeasedMessage) async throws -> SingleDelivery {
        try await transport.deliverOnce(message)
    }

    /// The run, over the transport's own type.
    private func send<Transport: PushTransport>(over transport: Transport) async throws -> SendSummary {
        let started = ContinuousClock.now
        try await transport.prepare()
        defer { transport.close() }
        let machine = SenderStateMachine<ContinuousClock.Instant>(machineConfiguration)
        transport.metrics.ratePerSecond.record(machine.ratePerSecond)
        let (configuration, logger, control) = (configuration, logger, control)
        var summary = try await withTaskExecutorPreference(control) {
            try await database.withOutboxConsumer { consumer in
                let driver = SenderDriver(
                    consumer: consumer, transport: transport, owner: configuration.owner, leaseSeconds: configuration.leaseSeconds,
                    maxAttempts: configuration.maxAttempts, clock: configuration.clock, control: control, metrics: transport.metrics,
                    logger: logger)
                return try await driver.run(machine)
            }
        }
        summary.seconds = (ContinuousClock.now - started).seconds
        return summary
    }

    /// The state machine's settings: the sender's, with what the provider adds (a dry run, the
    /// wrong-environment check).
    var machineConfiguration: SenderStateMachine<ContinuousClock.Instant>.Configuration {
        let dry = transport.validateOnly
        var machine = SenderStateMachine<ContinuousClock.Instant>.Configuration(
            lanes: transport.laneCapacities, leaseBatch: configuration.leaseBatch ?? max(16, configuration.concurrency * 2),
            refillBelow: configuration.concurrency, extendEvery: .seconds(Double(configuration.leaseSeconds) / 3),
            maxAttempts: configuration.maxAttempts)
        machine.concurrency = configuration.concurrency
        machine.openPerRequest = dry ? 1 : 2
        machine.pollInterval = configuration.pollInterval
        machine.idleCheck = min(configuration.pollInterval, .milliseconds(100))
        machine.drain = configuration.drain
        machine.validateOnly = dry
        machine.retry = configuration.retry
        machine.ratePerMinute = configuration.ratePerMinute
        machine.environmentCheck = transport.environmentCheck
        var random = SystemRandomNumberGenerator()
        machine.seed = random.next()
        return machine
    }
}
