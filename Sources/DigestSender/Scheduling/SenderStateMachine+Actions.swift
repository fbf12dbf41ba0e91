import DigestStore

/// What ``SenderStateMachine`` is told at its start, and what it answers events with.
extension SenderStateMachine {
    struct Configuration: Sendable {
        /// Requests each lane (a connection) carries at once.
        var lanes: [Int]
        /// Messages a lane may hold per request it carries: sending, or answered and waiting for the
        /// store (2), or sending only (1: a dry run settles nothing).
        var openPerRequest = 2
        /// Messages leased (or read, dry) at once.
        var leaseBatch: Int
        /// Lease again when fewer than this many wait to be sent.
        var refillBelow: Int
        /// After a lease that found nothing, the next one waits this long.
        var pollInterval: Duration = .seconds(1)
        /// Draining and idle: the backlog is asked again after this long.
        var idleCheck: Duration = .milliseconds(100)
        /// Held leases are extended this often (a third of their length).
        var extendEvery: Duration
        var maxAttempts: Int
        var drain = false
        var validateOnly = false
        var retry = RetryPolicy()
        var ratePerMinute: Int?
        /// Seeds the backoff's jitter.
        var seed: UInt64 = 0
        /// The requests in flight the sender was asked for (the pacer's burst is at most that).
        var concurrency: Int
        /// The provider's dead-token answer may mean a wrong endpoint (APNs' `BadDeviceToken`: tokens
        /// of the sandbox sent to production, or the reverse): nil for FCM.
        var environmentCheck: EnvironmentCheck?

        init(lanes: [Int], leaseBatch: Int, refillBelow: Int, extendEvery: Duration, maxAttempts: Int) {
            self.lanes = lanes
            self.leaseBatch = leaseBatch
            self.refillBelow = refillBelow
            self.extendEvery = extendEvery
            self.maxAttempts = maxAttempts
            self.concurrency = lanes.reduce(0, +)
        }
    }

    /// When the first `answers` answers of a run all say `suspectEnvironment`, the run fails with
    /// `error` and no device is marked dead.
    struct EnvironmentCheck: Sendable {
        var answers = 20
        var error: SenderError
    }

    /// What the driver does next; each of the first five is answered by one event.
    enum Action: Sendable {
        /// Lease up to `limit` due messages; answer ``leased(_:at:)`` or ``storeFailed(_:)``.
        case lease(limit: Int)
        /// A dry run: read up to `limit` due messages after `afterID`; answer ``leased(_:at:)``.
        case peek(afterID: Int64, limit: Int)
        /// Try `message` on `lane`; answer ``answered(_:_:at:unixTime:)``.
        case send(LeasedMessage, lane: Int)
        /// Write these outcomes in one transaction; answer ``settled(applied:at:)``.
        case settle([Settlement])
        /// Extend the leases on `ids`; answer ``extended(kept:at:)``.
        case extend([Int64])
        /// Draining and idle: ask what is left; answer ``backlog(_:at:)``.
        case checkBacklog
        /// Call ``timerFired(at:)`` at `at` (an earlier wake already asked for may come first).
        case wake(at: Instant)
        /// Something to count or log; no answer.
        case report(Report)
        /// Done: nothing in flight, nothing left to write.
        case finish(SendSummary)
        /// Stop: the credentials were refused (after everything in flight was settled), the store
        /// failed (at once), or the driver sent an impossible event.
        case fail(any Error)
    }

    /// What the driver counts (metrics) or logs.
    enum Report: Sendable, Hashable {
        case sent, validated
        case retried(code: String, id: Int64, after: Duration)
        case dead(code: String, id: Int64, userID: String)
        /// Leases given back untried.
        case released(Int)
        /// A message given back untried for a later look (``PushOutcome/postponed(_:for:)``).
        case postponed(code: String, id: Int64)
        /// A provider's hold on every send started or grew.
        case held
        /// Sends waited this long for the pacer.
        case paced(Duration)
        case leased(Int)
        /// An extension found leases taken by another sender.
        case leasesLost(lost: Int, held: Int)
        /// Outcomes of leases lost meanwhile that the store did not apply.
        case outcomesNotApplied(Int)
    }
}
