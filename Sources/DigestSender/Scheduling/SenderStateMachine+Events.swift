import DigestStore

/// The events: each says what happened and when, and returns what to do next.
extension SenderStateMachine {
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
        guard store == .leasing else { return unexpected("leased", "with no lease in flight") }
        store = nil
        var actions: [Action] = []
        var fresh = messages
        if configuration.validateOnly {
            scanCursor = messages.last?.id ?? scanCursor
        } else {
            // A message already held was leased again after its lease lapsed (a sender starved of CPU
            // longer than the lease): the copy held stands, and sending the new one too would deliver
            // it twice.
            fresh = messages.filter { message in
                lost.remove(message.id)
                postponedAfterTries.remove(message.id)
                return held.insert(message.id).inserted
            }
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
        lanes[started.lane].sending -= 1
        var actions: [Action] = []
        record(outcome, of: started.message, lane: started.lane, at: now, unixTime: unixTime, &actions)
        return actions + advance(now)
    }

    /// The outcomes being written are in the store; `applied` of them changed a row (the others'
    /// leases were lost meanwhile, and another sender's outcome stands).
    mutating func settled(applied: Int, at now: Instant) -> [Action] {
        if let refusal = refusal("settled") { return refusal }
        guard case .settling(let count) = store else { return unexpected("settled", "with no settlement in flight") }
        store = nil
        for (id, lane) in writing {
            if let lane { lanes[lane].unsettled -= 1 }
            held.remove(id)
            lost.remove(id)
        }
        writing.removeAll(keepingCapacity: true)
        var actions: [Action] = []
        if applied < count { actions.append(.report(.outcomesNotApplied(count - applied))) }
        return actions + advance(now)
    }

    /// The extension in flight kept the leases on `kept`; the others asked for are lost.
    mutating func extended(kept: Set<Int64>, at now: Instant) -> [Action] {
        if let refusal = refusal("extended") { return refusal }
        guard case .extending(let asked) = store else { return unexpected("extended", "with no extension in flight") }
        store = nil
        var newlyLost = 0
        for id in asked where !kept.contains(id) && held.contains(id) {
            if lost.insert(id).inserted { newlyLost += 1 }
        }
        let report: [Action] = newlyLost > 0 ? [.report(.leasesLost(lost: newlyLost, held: asked.count))] : []
        return report + advance(now)
    }

    /// Draining: what the outbox has left. Nothing: done.
    mutating func backlog(_ backlog: OutboxBacklog, at now: Instant) -> [Action] {
        if let refusal = refusal("backlog") { return refusal }
        guard store == .backlog else { return unexpected("backlog", "with no backlog question in flight") }
        store = nil
        backlogAskedAt = now
        // The retries the outbox counts include the messages this run postponed after earlier tries:
        // not waited for (an over-count, should another sender have settled one, only ends the
        // drain earlier; what is left goes with the next run).
        var backlog = backlog
        backlog.retrying = max(0, backlog.retrying - postponedAfterTries.count)
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

    // MARK: Helpers

    /// Nothing buffered, sending, waiting for or being written.
    var isIdle: Bool { buffered == 0 && sending.isEmpty && pending.isEmpty && store == nil }

    /// Stops sending; buffered messages are released.
    mutating func stop(refusal: SenderError?, _ actions: inout [Action]) {
        if case .stopping(let earlier) = phase, earlier != nil { return }
        phase = .stopping(refusal: refusal)
        if suspectAnswers == .held {
            // Undecided: nothing is known of those tokens; they are tried again by a later run.
            suspectAnswers = .released
            release(provisional.map(\.message), &actions)
            provisional.removeAll()
        }
        let unsent = Array(buffer[head...])
        buffer.removeAll()
        head = 0
        pacedSince = nil
        release(unsent, &actions)
    }

    /// Gives leases back untried (nothing to give back in a dry run).
    mutating func release(_ messages: [LeasedMessage], _ actions: inout [Action]) {
        guard !configuration.validateOnly, !messages.isEmpty else { return }
        for message in messages { pending.append((.release(id: message.id), nil)) }
        summary.released += messages.count
        actions.append(.report(.released(messages.count)))
    }

    /// `nil` when an event may apply; otherwise the answer: `[]` once over, a `.fail` before `start`.
    mutating func refusal(_ event: String) -> [Action]? {
        switch phase {
        case .running, .stopping: nil
        case .over: []
        case .notStarted: unexpected(event, "before start()")
        }
    }

    mutating func unexpected(_ event: String, _ why: String) -> [Action] {
        phase = .over
        return [.fail(UnexpectedSenderEvent(description: "sender scheduler: \(event) \(why)"))]
    }
}
