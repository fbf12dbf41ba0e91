import DigestCore
import DigestStore

/// The sender's scheduling, without I/O: events in, actions out.
///
/// ``PushSender`` (its driver, ``SenderDriver``) carries the actions out against the store's outbox
/// consumer and a ``PushTransport``, and reports how each ended as one event. The machine has no
/// clock (every event says when it happened, on a monotonic `Instant`; an answer also says the
/// sender's Unix time, which retry times follow), does no I/O and never suspends, so every order in
/// which leases, answers, settlements, timers and stops can arrive can be tested. Its state is
/// private: tests drive events and read actions (and ``inFlight``, ``leasesHeld``).
///
/// It owns what is leased (``LeaseBook``: held, and lost when an extension found it taken), what is
/// in flight (``SendingLanes``), the pacing (``RatePacer``) and the hold a provider asks for,
/// retries (backoff and `Retry-After`), the batching of settlements, and stopping. The invariants,
/// true after every event:
/// - At most one store operation runs at a time (lease or peek, settle, extend, backlog), so the
///   leases the machine holds follow the store's order; the outcomes being written are part of the
///   settlement running (``StoreOperation/settling(_:)``), never apart from it. Extensions go first
///   when due; leases and settlements take turns.
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
///   wrong environment (``PushOutcome/deviceDead(_:diedAt:suspectEnvironment:)``) are held back
///   (``SuspectAnswers/held(_:)``: the answers are kept only while undecided), not written and
///   holding no lane room (nothing was delivered), until the run's answers decide: the first
///   `answers` answers all such fail the run with the check's error and release them (no device
///   marked dead); any other answer first (a retry is none: it says nothing of the tokens), or an
///   idle run with fewer, makes them dead; a stop releases them.
///
/// An event that cannot happen in the current state (an answer for a message not in flight, a
/// store result with no such operation running, an event before `start` or a second `start`) is a
/// bug in the driver: the machine answers `.fail(UnexpectedSenderEvent)` rather than trapping.
struct SenderStateMachine<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    private enum Phase: Equatable {
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

    /// The store operation running.
    private enum StoreOperation {
        case leasing, backlog
        case extending([Int64])
        /// The outcomes being written: their ids and the lanes whose room they hold (none for a release).
        case settling([(id: Int64, lane: Int?)])
    }

    /// A dead-device answer that may only mean the wrong environment, held undecided.
    private struct Suspect {
        let message: LeasedMessage
        let failure: PushOutcome.Failure
        let diedAt: Int64?
    }

    /// What becomes of the answers that may mean the wrong environment.
    private enum SuspectAnswers {
        /// Undecided: these are held, not written.
        case held([Suspect])
        /// The tokens fit the endpoint: such answers are dead devices.
        case dead
        /// The run stopped undecided, or decided the environment is wrong: such messages are released untried.
        case released
    }

    /// The rate limit, and since when sends wait for it.
    private struct Pacing {
        var pacer: RatePacer<Instant>
        var waitingSince: Instant?
    }

    private let configuration: Configuration
    private var phase = Phase.notStarted
    private var lanes: SendingLanes
    /// Leased (or read) and not started yet, from `head`.
    private var buffer: [LeasedMessage] = []
    private var head = 0
    private var sending: [Int64: (message: LeasedMessage, lane: Int)] = [:]
    /// Outcomes waiting for the store, with the lane whose room they hold (none for a release).
    private var pending: [(settlement: Settlement, lane: Int?)] = []
    private var store: StoreOperation?
    /// Leases and settlements take turns: the last store operation started was a settlement.
    private var settledLast = false
    private var leases = LeaseBook()
    private var emptyLeaseAt: Instant?
    private var backlogAskedAt: Instant?
    /// When held leases are extended next (nil in a dry run, which holds none).
    private var nextExtension: Instant?
    /// A dry run: the last id read.
    private var scanCursor: Int64 = 0
    /// The provider asked for nothing to be sent before this.
    private var holdUntil: Instant?
    private var pacing: Pacing?
    /// Wake-ups asked for and not yet come.
    private var wakes: [Instant] = []
    private var summary = SendSummary()
    private var random: SplitMix64
    private var suspects: SuspectAnswers

    init(_ configuration: Configuration) {
        self.configuration = configuration
        lanes = SendingLanes(capacities: configuration.lanes, openPerRequest: configuration.openPerRequest)
        // A burst of at most a second's worth, or the requests in flight.
        pacing = configuration.ratePerMinute.map {
            Pacing(pacer: RatePacer(perMinute: $0, burst: min(configuration.concurrency, max(1, $0 / 60))))
        }
        random = SplitMix64(seed: configuration.seed)
        suspects = configuration.environmentCheck == nil || configuration.validateOnly ? .dead : .held([])
    }

    /// Messages in flight: sending, or answered and waiting for the store.
    var inFlight: Int { lanes.inFlight }

    /// Leases held: from the lease until the outcome is written (0 once a run ended).
    var leasesHeld: Int { leases.count }

    /// The pacer's steady rate, sends a second (0: unpaced).
    var ratePerSecond: Double { pacing?.pacer.perSecond ?? 0 }

    /// Messages leased and not started.
    private var buffered: Int { buffer.count - head }

    // MARK: Events

    /// Starts sending: the first lease (or read), and the lease extensions' clock.
    mutating func start(at now: Instant) -> [Action] {
        guard phase == .notStarted else { return phase == .over ? [] : unexpected("start()", "twice") }
        phase = .running
        if !configuration.validateOnly { nextExtension = now.advanced(by: configuration.extendEvery) }
        return advance(now)
    }

    /// The lease (or, dry, the read) in flight returned `messages`.
    mutating func leased(_ messages: [LeasedMessage], at now: Instant) -> [Action] {
        if let refusal = refusal("leased") { return refusal }
        guard case .leasing? = store else { return unexpected("leased", "with no lease in flight") }
        store = nil
        var actions: [Action] = []
        var fresh = messages
        if configuration.validateOnly {
            scanCursor = messages.last?.id ?? scanCursor
        } else {
            fresh = leases.take(messages)
            if !fresh.isEmpty { actions.append(.report(.leased(fresh.count))) }
        }
        emptyLeaseAt = fresh.isEmpty ? now : nil
        if case .stopping = phase {
            release(fresh, &actions)
        } else {
            if head > 0 && head == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                head = 0
            }
            buffer += fresh
        }
        return actions + advance(now)
    }

    /// The try of message `id` came to `outcome`; `unixTime` is the sender's clock, which a retry's
    /// time follows.
    mutating func answered(_ id: Int64, _ outcome: PushOutcome, at now: Instant, unixTime: Int64) -> [Action] {
        if let refusal = refusal("answered(\(id))") { return refusal }
        guard let started = sending.removeValue(forKey: id) else { return unexpected("answered(\(id))", "for a message not in flight") }
        lanes.ended(on: started.lane)
        var actions: [Action] = []
        record(outcome, of: started.message, lane: started.lane, at: now, unixTime: unixTime, &actions)
        return actions + advance(now)
    }

    /// The outcomes being written are in the store; `applied` of them changed a row (the others'
    /// leases were lost meanwhile, and another sender's outcome stands).
    mutating func settled(applied: Int, at now: Instant) -> [Action] {
        if let refusal = refusal("settled") { return refusal }
        guard case .settling(let writing)? = store else { return unexpected("settled", "with no settlement in flight") }
        store = nil
        for (id, lane) in writing {
            if let lane { lanes.written(on: lane) }
            leases.written(id)
        }
        var actions: [Action] = []
        if applied < writing.count { actions.append(.report(.outcomesNotApplied(writing.count - applied))) }
        return actions + advance(now)
    }

    /// The extension in flight kept the leases on `kept`; the others asked for are lost.
    mutating func extended(kept: Set<Int64>, at now: Instant) -> [Action] {
        if let refusal = refusal("extended") { return refusal }
        guard case .extending(let asked)? = store else { return unexpected("extended", "with no extension in flight") }
        store = nil
        let newlyLost = leases.extended(asked, kept: kept)
        let report: [Action] = newlyLost > 0 ? [.report(.leasesLost(lost: newlyLost, held: asked.count))] : []
        return report + advance(now)
    }

    /// Draining: what the outbox has left. Nothing: done.
    mutating func backlog(_ backlog: OutboxBacklog, at now: Instant) -> [Action] {
        if let refusal = refusal("backlog") { return refusal }
        guard case .backlog? = store else { return unexpected("backlog", "with no backlog question in flight") }
        store = nil
        backlogAskedAt = now
        // The retries the outbox counts include the messages this run postponed after earlier tries:
        // not waited for (an over-count, should another sender have settled one, only ends the
        // drain earlier; what is left goes with the next run).
        var backlog = backlog
        backlog.retrying = max(0, backlog.retrying - leases.postponedRetries)
        if backlog.isEmpty && phase == .running && isIdle {
            summary.waiting = backlog.waiting
            summary.nextDue = backlog.nextDue
            phase = .over
            return [.finish(summary)]
        }
        return advance(now)
    }

    /// A wake-up asked for came (or an earlier one).
    mutating func timerFired(at now: Instant) -> [Action] {
        guard phase != .over else { return [] }
        wakes.removeAll { $0 <= now }
        return advance(now)
    }

    /// Graceful shutdown or cancellation: send nothing new, release what is not sent, settle what is
    /// in flight, then finish.
    mutating func stopRequested(at now: Instant) -> [Action] {
        switch phase {
        case .notStarted:
            phase = .over
            return [.finish(summary)]
        case .running:
            var actions: [Action] = []
            stop(refusal: nil, &actions)
            return actions + advance(now)
        case .stopping, .over:
            return []
        }
    }

    /// A store operation failed: stop at once (what is in flight is abandoned; its leases lapse).
    mutating func storeFailed(_ error: any Error) -> [Action] {
        guard phase != .over else { return [] }
        phase = .over
        return [.fail(error)]
    }

    // MARK: Outcomes

    /// Counts `outcome` and queues the outbox change it makes (none in a dry run).
    private mutating func record(
        _ outcome: PushOutcome, of message: LeasedMessage, lane: Int, at now: Instant, unixTime: Int64, _ actions: inout [Action]
    ) {
        let dry = configuration.validateOnly
        switch outcome {
        case .sent(let receipt):
            decideSuspects(&actions)
            if dry {
                summary.validated += 1
                actions.append(.report(.validated))
            } else {
                summary.sent += 1
                actions.append(.report(.sent))
                settle(.sent(id: message.id, name: receipt), lane: lane)
            }
        case .retry(let after, let failure, let pause):
            if let pause { hold(until: now.advanced(by: pause), &actions) }
            let delay = max(after ?? .zero, configuration.retry.backoff(attempt: message.attempts, using: &random))
            if message.attempts >= configuration.maxAttempts && !dry {
                summary.dead[failure.code, default: 0] += 1
                actions.append(.report(.dead(code: failure.code, id: message.id, userID: message.userID)))
            } else {
                summary.retried[failure.code, default: 0] += 1
                actions.append(.report(.retried(code: failure.code, id: message.id, after: delay)))
            }
            // The store makes it dead once its attempts are used up.
            if !dry { settle(.retry(id: message.id, at: unixTime + Int64(delay.seconds.rounded(.up)), error: failure.reason), lane: lane) }
        case .deviceDead(let failure, let diedAt, let suspect):
            if suspect, holdSuspect(message, failure, diedAt: diedAt, &actions) { return }
            decideSuspects(&actions)
            summary.dead[failure.code, default: 0] += 1
            if !dry { summary.devicesRemoved += 1 }
            actions.append(.report(.dead(code: failure.code, id: message.id, userID: message.userID)))
            if !dry { settle(.unregistered(id: message.id, reason: failure.reason, diedAt: diedAt), lane: lane) }
        case .messageDead(let failure):
            decideSuspects(&actions)
            summary.dead[failure.code, default: 0] += 1
            actions.append(.report(.dead(code: failure.code, id: message.id, userID: message.userID)))
            if !dry { settle(.dead(id: message.id, reason: failure.reason), lane: lane) }
        case .credentialsRefused(let error):
            // Not tried as far as the outbox is concerned: released, as the ones not sent.
            if !dry { pending.append((.release(id: message.id), nil)) }
            stop(refusal: error, &actions)
        case .postponed(let failure, let wait):
            summary.postponed[failure.code, default: 0] += 1
            actions.append(.report(.postponed(code: failure.code, id: message.id)))
            if !dry {
                // Tried before this lease: the outbox will count it as a retry waiting (only a
                // draining sender asks; a sender left running keeps no such set).
                if configuration.drain && message.attempts > 1 { leases.postponedAfterTry(message.id) }
                settle(.release(id: message.id, until: unixTime + Int64(wait.seconds.rounded(.up)), reason: failure.reason), lane: lane)
            }
        }
    }

    /// A suspect answer while undecided is held (no lane room: nothing was delivered); the check's
    /// number of them, all the run's answers so far, fail the run. Once released, it is released.
    /// Returns false once such answers are dead devices: the caller records it as one.
    private mutating func holdSuspect(_ message: LeasedMessage, _ failure: PushOutcome.Failure, diedAt: Int64?, _ actions: inout [Action]) -> Bool {
        switch suspects {
        case .dead:
            return false
        case .released:
            release([message], &actions)
        case .held(var held):
            held.append(Suspect(message: message, failure: failure, diedAt: diedAt))
            suspects = .held(held)
            if let check = configuration.environmentCheck, held.count >= check.answers { stop(refusal: check.error, &actions) }
        }
        return true
    }

    /// An answer that is not suspect came first, or the run is idle: the suspect answers held are
    /// dead devices, and so are those to come.
    private mutating func decideSuspects(_ actions: inout [Action]) {
        guard case .held(let held) = suspects else { return }
        suspects = .dead
        for suspect in held {
            let (message, failure) = (suspect.message, suspect.failure)
            summary.dead[failure.code, default: 0] += 1
            summary.devicesRemoved += 1
            actions.append(.report(.dead(code: failure.code, id: message.id, userID: message.userID)))
            pending.append((.unregistered(id: message.id, reason: failure.reason, diedAt: suspect.diedAt), nil))
        }
    }

    private mutating func settle(_ settlement: Settlement, lane: Int) {
        lanes.awaitsStore(on: lane)
        pending.append((settlement, lane))
    }

    /// Every send waits until `until`, unless a hold lasts longer already.
    private mutating func hold(until: Instant, _ actions: inout [Action]) {
        if let current = holdUntil, current >= until { return }
        holdUntil = until
        actions.append(.report(.held))
    }

    // MARK: What starts next

    /// Starts what can start at `now`: sends, a store operation, the end; asks for a wake-up at the
    /// next instant something waits for.
    private mutating func advance(_ now: Instant) -> [Action] {
        guard phase != .over else { return [] }
        var actions: [Action] = []
        // Sends first: a lease then sees what they left in the buffer.
        if phase == .running { startSends(now, &actions) }
        // Idle with suspect answers held, fewer than the check's: nothing more will decide them.
        if phase == .running, case .held(let held) = suspects, !held.isEmpty, buffered == 0, sending.isEmpty, emptyLeaseAt != nil {
            decideSuspects(&actions)
        }
        startStoreOperation(now, &actions)
        if let end = end() {
            phase = .over
            actions.append(end)
            return actions
        }
        if let next = nextWake(now), !wakes.contains(where: { $0 <= next }) {
            wakes.append(next)
            actions.append(.wake(at: next))
        }
        return actions
    }

    /// The end, when it has come.
    private func end() -> Action? {
        switch phase {
        case .stopping(let refusal):
            guard sending.isEmpty, pending.isEmpty, store == nil else { return nil }
            return refusal.map { .fail($0) } ?? .finish(summary)
        case .running:
            // A dry run ends once a read found nothing more and every try is answered.
            guard configuration.validateOnly, emptyLeaseAt != nil, isIdle else { return nil }
            return .finish(summary)
        case .notStarted, .over:
            return nil
        }
    }

    /// Extensions when due; otherwise leases and settlements in turn; draining and idle, the backlog.
    private mutating func startStoreOperation(_ now: Instant, _ actions: inout [Action]) {
        guard store == nil else { return }
        if let due = nextExtension, due <= now {
            nextExtension = now.advanced(by: configuration.extendEvery)
            if leases.count > 0 {
                let ids = leases.ids
                store = .extending(ids)
                actions.append(.extend(ids))
                return
            }
        }
        let wantsLease = phase == .running && buffered < configuration.refillBelow
            && emptyLeaseAt.map { $0.duration(to: now) >= configuration.pollInterval } ?? true
        if wantsLease && (pending.isEmpty || settledLast) {
            settledLast = false
            store = .leasing
            actions.append(configuration.validateOnly ? .peek(afterID: scanCursor, limit: configuration.leaseBatch) : .lease(limit: configuration.leaseBatch))
        } else if !pending.isEmpty {
            settledLast = true
            store = .settling(pending.map { (id: $0.settlement.id, lane: $0.lane) })
            actions.append(.settle(pending.map(\.settlement)))
            pending.removeAll(keepingCapacity: true)
        } else if backlogDue(now) {
            store = .backlog
            actions.append(.checkBacklog)
        }
    }

    /// Draining, idle after a lease that found nothing, and not asked too recently.
    private func backlogDue(_ now: Instant) -> Bool {
        configuration.drain && !configuration.validateOnly && phase == .running && emptyLeaseAt != nil && isIdle
            && backlogAskedAt.map { $0.duration(to: now) >= configuration.idleCheck } ?? true
    }

    /// Sends buffered messages while a lane has room, the provider's hold is over and the pacer allows.
    private mutating func startSends(_ now: Instant, _ actions: inout [Action]) {
        while head < buffer.count {
            if let until = holdUntil {
                if until > now { return }
                holdUntil = nil
            }
            guard let lane = lanes.roomiest else { return }
            if pacing != nil {
                // At least a millisecond: a wake-up costs more than that; the slots missed meanwhile
                // are still free and the next sends take them at once.
                if pacing!.pacer.delay(now: now) > .zero {
                    if pacing!.waitingSince == nil { pacing!.waitingSince = now }
                    return
                }
                pacing!.pacer.take(now: now)
                if let since = pacing!.waitingSince {
                    pacing!.waitingSince = nil
                    actions.append(.report(.paced(since.duration(to: now))))
                }
            }
            let message = buffer[head]
            head += 1
            // Its lease lapsed and was extended by nobody: another sender may hold it now.
            if !configuration.validateOnly && leases.giveUpIfLost(message.id) { continue }
            lanes.started(on: lane)
            sending[message.id] = (message, lane)
            actions.append(.send(message, lane: lane))
        }
    }

    /// The next instant something waits for: an extension, the hold's end, the pacer's slot, the next
    /// lease after an empty one, the next backlog question.
    private func nextWake(_ now: Instant) -> Instant? {
        var candidates: [Instant] = []
        if let due = nextExtension { candidates.append(due) }
        if phase == .running {
            if buffered > 0 && lanes.roomiest != nil {
                if let until = holdUntil, until > now {
                    candidates.append(until)
                } else if let pacing {
                    candidates.append(now.advanced(by: max(pacing.pacer.delay(now: now), .milliseconds(1))))
                }
            }
            if buffered < configuration.refillBelow, let empty = emptyLeaseAt { candidates.append(empty.advanced(by: configuration.pollInterval)) }
            if configuration.drain, emptyLeaseAt != nil {
                candidates.append(backlogAskedAt.map { $0.advanced(by: configuration.idleCheck) } ?? now)
            }
        }
        return candidates.filter { $0 > now }.min()
    }

    // MARK: Helpers

    /// Nothing buffered, sending, waiting for or being written.
    private var isIdle: Bool { buffered == 0 && sending.isEmpty && pending.isEmpty && store == nil }

    /// Stops sending; buffered messages (and suspect answers still undecided) are released.
    private mutating func stop(refusal: SenderError?, _ actions: inout [Action]) {
        if case .stopping(let earlier) = phase, earlier != nil { return }
        phase = .stopping(refusal: refusal)
        if case .held(let held) = suspects {
            // Undecided: nothing is known of those tokens; they are tried again by a later run.
            suspects = .released
            release(held.map(\.message), &actions)
        }
        let unsent = Array(buffer[head...])
        buffer.removeAll()
        head = 0
        pacing?.waitingSince = nil
        release(unsent, &actions)
    }

    /// Gives leases back untried (nothing to give back in a dry run).
    private mutating func release(_ messages: [LeasedMessage], _ actions: inout [Action]) {
        guard !configuration.validateOnly, !messages.isEmpty else { return }
        for message in messages { pending.append((.release(id: message.id), nil)) }
        summary.released += messages.count
        actions.append(.report(.released(messages.count)))
    }

    /// `nil` when an event may apply; otherwise the answer: `[]` once over, a `.fail` before `start`.
    private mutating func refusal(_ event: String) -> [Action]? {
        switch phase {
        case .running, .stopping: nil
        case .over: []
        case .notStarted: unexpected(event, "before start()")
        }
    }

    private mutating func unexpected(_ event: String, _ why: String) -> [Action] {
        phase = .over
        return [.fail(UnexpectedSenderEvent(description: "sender scheduler: \(event) \(why)"))]
    }
}

/// An event the sender's state machine cannot take in its state: a bug in the driver.
struct UnexpectedSenderEvent: Error, CustomStringConvertible {
    let description: String
}
