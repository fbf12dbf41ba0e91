import DigestStore

/// The sender's scheduling, without I/O: events in, actions out.
///
/// ``PushSender`` (its driver, ``SenderDriver``) carries the actions out against
/// the store's outbox consumer and a ``PushTransport``, and report how each ended as one event. The machine has no
/// clock (every event says when it happened, on a monotonic `Instant`; an answer also says the
/// sender's Unix time, which retry times follow), does no I/O and never suspends, so every order in
/// which leases, answers, settlements, timers and stops can arrive can be tested.
///
/// It owns what is leased (held, and lost when an extension found it taken), what is in flight, the
/// pacing (``RatePacer``) and the hold a provider asks for, retries (backoff and `Retry-After`), the
/// batching of settlements, and stopping. The invariants, true after every event:
/// - At most one store operation runs at a time (lease or peek, settle, extend, backlog), so the
///   leases the machine holds follow the store's order. Extensions go first when due; leases and
///   settlements take turns.
/// - A lane has at most its capacity of requests sending, and at most `openPerRequest` times its
///   capacity of messages sending or answered and not yet settled: a sender killed at any moment has
///   delivered without recording at most that (docs/003-outbox-consumers.md, the duplicate bound).
/// - Every leased message is settled exactly once (sent, retry, dead, released) unless its lease
///   was lost (then another sender holds it, and it is forgotten unsent), and is never sent twice
///   at once: a lease that returns a message already held is ignored.
/// - Sends keep to the pacer and to the provider's hold; none starts after a stop or a refusal of the
///   credentials. A stop releases what is leased and not sent; the requests in flight finish and
///   are settled; then `.finish` (or `.fail` with the refusal).
/// - `.finish` and `.fail` come once, last; after them every event returns `[]`.
/// - With an ``Configuration/environmentCheck`` (APNs), dead-device answers that may only mean the
///   wrong environment (``PushOutcome/deviceDead(_:diedAt:suspectEnvironment:)``) are held back, not
///   written and holding no lane room (nothing was delivered), until the run's answers decide: the
///   first `answers` answers all such fail the run with the check's error and release them (no
///   device marked dead); any other answer first (a retry is none: it says nothing of the tokens),
///   or an idle run with fewer, makes them dead; a stop releases them.
///
/// An event that cannot happen in the current state (an answer for a message not in flight, a
/// store result with no such operation running) is a bug in the driver: the machine answers
/// `.fail(UnexpectedSenderEvent)` rather than trapping.
struct SenderStateMachine<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
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

    /// What becomes of the answers that may mean the wrong environment.
    enum SuspectAnswers: Equatable {
        /// Undecided: kept in ``SenderStateMachine/provisional``, not written.
        case held
        /// The tokens fit the endpoint: such answers are dead devices.
        case dead
        /// The run stopped undecided, or decided the environment is wrong: such messages are released untried.
        case released
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

    enum Phase: Equatable {
        case notStarted, running
        /// Sends nothing new; ends once the requests in flight are settled. `refusal`: why, if not asked to.
        case stopping(refusal: SenderError?)
        case over

        static func == (lhs: Phase, rhs: Phase) -> Bool {
            switch (lhs, rhs) {
            case (.notStarted, .notStarted), (.running, .running), (.over, .over): true
            case (.stopping(let a), .stopping(let b)): a?.message == b?.message
            default: false
            }
        }
    }

    enum StoreOperation: Equatable {
        case leasing, extending([Int64]), backlog
        case settling(count: Int)
    }

    struct Lane: Sendable {
        let capacity: Int
        let open: Int
        var sending = 0
        /// Answered, outcome not yet written.
        var unsettled = 0

        var hasRoom: Bool { sending < capacity && sending + unsettled < open }
    }

    let configuration: Configuration
    var phase = Phase.notStarted
    var lanes: [Lane]
    /// Leased (or read) and not started yet, from `head`.
    var buffer: [LeasedMessage] = []
    var head = 0
    var sending: [Int64: (message: LeasedMessage, lane: Int)] = [:]
    /// Outcomes waiting for the store, with the lane whose room they hold (none for a release).
    var pending: [(settlement: Settlement, lane: Int?)] = []
    /// The outcomes being written: their ids and lanes.
    var writing: [(id: Int64, lane: Int?)] = []
    var store: StoreOperation?
    var lastStoreWasSettle = false
    /// Leases held, from the lease until their outcome is written.
    var held: Set<Int64> = []
    /// Held ids an extension found no longer ours: their lease lapsed and the row moved on.
    var lost: Set<Int64> = []
    /// Messages this run postponed that had been tried before (a retry, then a host not allowed): the
    /// outbox counts them among its retries (tried, not due yet), which a draining sender waits
    /// for; a postponed message it does not wait for. Leased again, a message leaves the set.
    var postponedAfterTries: Set<Int64> = []
    var emptyLeaseAt: Instant?
    var backlogAskedAt: Instant?
    var nextExtension: Instant?
    /// A dry run: the last id read.
    var scanCursor: Int64 = 0
    /// The provider asked for nothing to be sent before this.
    var holdUntil: Instant?
    var pacer: RatePacer<Instant>?
    /// Since when sends wait for the pacer.
    var pacedSince: Instant?
    /// Wake-ups asked for and not yet come.
    var wakes: [Instant] = []
    var summary = SendSummary()
    var random: SplitMix64
    var suspectAnswers: SuspectAnswers
    /// Answers that may mean the wrong environment, held while ``suspectAnswers`` is `.held`.
    var provisional: [(message: LeasedMessage, failure: PushOutcome.Failure, diedAt: Int64?)] = []

    init(_ configuration: Configuration) {
        precondition(!configuration.lanes.isEmpty && configuration.lanes.allSatisfy { $0 >= 1 }, "every lane carries a request at least")
        self.configuration = configuration
        lanes = configuration.lanes.map { Lane(capacity: $0, open: $0 * max(1, configuration.openPerRequest)) }
        // A burst of at most a second's worth, or the requests in flight.
        pacer = configuration.ratePerMinute.map { RatePacer(perMinute: $0, burst: min(configuration.concurrency, max(1, $0 / 60))) }
        random = SplitMix64(seed: configuration.seed)
        suspectAnswers = configuration.environmentCheck == nil || configuration.validateOnly ? .dead : .held
    }

    /// Messages in flight: sending, or answered and waiting for the store.
    var inFlight: Int { lanes.reduce(0) { $0 + $1.sending + $1.unsettled } }

    /// Messages leased and not started.
    var buffered: Int { buffer.count - head }
}

/// An event the sender's state machine cannot take in its state: a bug in the driver.
struct UnexpectedSenderEvent: Error, CustomStringConvertible {
    let description: String
}

/// A small seedable generator for the backoff's jitter (SplitMix64): the machine stays a value.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
