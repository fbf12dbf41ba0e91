import CoreMetrics
import DigestNIO
import DigestStore
import Logging

/// One sender's run over any ``PushTransport``: what ``FCMSender/send()`` and ``APNsSender/send()``
/// share. ``SenderStateMachine`` decides; ``SenderDriver`` carries out its actions on the store's
/// outbox consumer (whose calls run one at a time, in order) and on the transport. A message counts
/// as in flight from its request until its outcome is written, so a sender killed at any moment has
/// delivered without recording at most what it had in flight.
struct SenderRun<Database: DigestPipelineStore, Transport: PushTransport>: Sendable {
    let database: Database
    let transport: Transport
    let owner: String
    let leaseSeconds: Int64
    let maxAttempts: Int
    /// The sender's clock in Unix seconds.
    let clock: @Sendable () -> Int64
    let metrics: SenderMetrics
    let logger: Logger

    /// Runs `machine` until it finishes; `control` is where the driver's loop and the store's tasks
    /// run (an event loop of the client: the messages' tasks are on those loops, and a loop wakes
    /// them back without a hop through the concurrency pool).
    func send(_ machine: SenderStateMachine<ContinuousClock.Instant>.Configuration, on control: EventLoopExecutor) async throws -> SendSummary {
        let started = ContinuousClock.now
        try await transport.prepare()
        defer { transport.close() }
        let machine = SenderStateMachine<ContinuousClock.Instant>(machine)
        metrics.ratePerSecond.record(machine.pacer.map(\.perSecond) ?? 0)
        var summary = try await withTaskExecutorPreference(control) {
            try await database.withOutboxConsumer { consumer in
                let driver = SenderDriver(
                    consumer: consumer, transport: transport, owner: owner, leaseSeconds: leaseSeconds, maxAttempts: maxAttempts, clock: clock,
                    control: control, metrics: metrics, logger: logger)
                return try await driver.run(machine)
            }
        }
        summary.seconds = (ContinuousClock.now - started).seconds
        return summary
    }
}

extension SenderStateMachine.Configuration where Instant == ContinuousClock.Instant {
    /// A sender's machine from the settings every sender's configuration has.
    static func sender(
        lanes: [Int], concurrency: Int, leaseSeconds: Int64, leaseBatch: Int?, maxAttempts: Int, pollInterval: Duration, drain: Bool,
        validateOnly: Bool, retry: RetryPolicy, ratePerMinute: Int?
    ) -> Self {
        var machine = Self(
            lanes: lanes, leaseBatch: leaseBatch ?? max(16, concurrency * 2), refillBelow: concurrency,
            extendEvery: .seconds(Double(leaseSeconds) / 3), maxAttempts: maxAttempts)
        machine.concurrency = concurrency
        machine.openPerRequest = validateOnly ? 1 : 2
        machine.pollInterval = pollInterval
        machine.idleCheck = min(pollInterval, .milliseconds(100))
        machine.drain = drain
        machine.validateOnly = validateOnly
        machine.retry = retry
        machine.ratePerMinute = ratePerMinute
        var random = SystemRandomNumberGenerator()
        machine.seed = random.next()
        return machine
    }
}
