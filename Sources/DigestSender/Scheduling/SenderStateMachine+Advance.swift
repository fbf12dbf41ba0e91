import DigestStore

/// What an outcome records, and what can start after an event.
extension SenderStateMachine {
    /// Counts `outcome` and queues the outbox change it makes (none in a dry run).
    mutating func record(_ outcome: PushOutcome, of message: LeasedMessage, lane: Int, at now: Instant, unixTime: Int64, _ actions: inout [Action]) {
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
            if suspect && suspectAnswers != .dead {
                holdSuspect(message, failure, diedAt: diedAt, &actions)
                return
            }
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
                if configuration.drain && message.attempts > 1 { postponedAfterTries.insert(message.id) }
                settle(.release(id: message.id, until: unixTime + Int64(wait.seconds.rounded(.up)), reason: failure.reason), lane: lane)
            }
        }
    }

    /// A suspect answer while undecided is held (no lane room: nothing was delivered); the check's
    /// number of them, all the run's answers so far, fail the run. Once released, it is released.
    private mutating func holdSuspect(_ message: LeasedMessage, _ failure: PushOutcome.Failure, diedAt: Int64?, _ actions: inout [Action]) {
        guard suspectAnswers == .held, let check = configuration.environmentCheck else {
            release([message], &actions)
            return
        }
        provisional.append((message, failure, diedAt))
        if provisional.count >= check.answers { stop(refusal: check.error, &actions) }
    }

    /// An answer that is not suspect came first, or the run is idle: the suspect answers held are
    /// dead devices, and so are those to come.
    mutating func decideSuspects(_ actions: inout [Action]) {
        guard suspectAnswers == .held else { return }
        suspectAnswers = .dead
        for (message, failure, diedAt) in provisional {
            summary.dead[failure.code, default: 0] += 1
            summary.devicesRemoved += 1
            actions.append(.report(.dead(code: failure.code, id: message.id, userID: message.userID)))
            pending.append((.unregistered(id: message.id, reason: failure.reason, diedAt: diedAt), nil))
        }
        provisional.removeAll()
    }

    private mutating func settle(_ settlement: Settlement, lane: Int) {
        lanes[lane].unsettled += 1
        pending.append((settlement, lane))
    }

    /// Every send waits until `until`, unless a hold lasts longer already.
    private mutating func hold(until: Instant, _ actions: inout [Action]) {
        if let current = holdUntil, current >= until { return }
        holdUntil = until
        actions.append(.report(.held))
    }

    /// Starts what can start at `now`: sends, a store operation, the end; asks for a wake-up at the
    /// next instant something waits for.
    mutating func advance(_ now: Instant) -> [Action] {
        guard phase != .over else { return [] }
        var actions: [Action] = []
        // Sends first: a lease then sees what they left in the buffer.
        if phase == .running { startSends(now, &actions) }
        // Idle with suspect answers held, fewer than the check's: nothing more will decide them.
        if phase == .running && !provisional.isEmpty && buffered == 0 && sending.isEmpty && emptyLeaseAt != nil {
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
            if !held.isEmpty {
                let ids = Array(held)
                store = .extending(ids)
                actions.append(.extend(ids))
                return
            }
        }
        let wantsLease = phase == .running && buffered < configuration.refillBelow
            && emptyLeaseAt.map { $0.duration(to: now) >= configuration.pollInterval } ?? true
        if wantsLease && (pending.isEmpty || lastStoreWasSettle) {
            lastStoreWasSettle = false
            store = .leasing
            actions.append(configuration.validateOnly ? .peek(afterID: scanCursor, limit: configuration.leaseBatch) : .lease(limit: configuration.leaseBatch))
        } else if !pending.isEmpty {
            lastStoreWasSettle = true
            store = .settling(count: pending.count)
            writing = pending.map { ($0.settlement.id, $0.lane) }
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
            guard let lane = roomiestLane() else { return }
            if let pacer {
                // At least a millisecond: a wake-up costs more than that; the slots missed meanwhile
                // are still free and the next sends take them at once.
                if pacer.delay(now: now) > .zero {
                    if pacedSince == nil { pacedSince = now }
                    return
                }
                self.pacer!.take(now: now)
                if let since = pacedSince {
                    pacedSince = nil
                    actions.append(.report(.paced(since.duration(to: now))))
                }
            }
            let message = buffer[head]
            head += 1
            // Its lease lapsed and was extended by nobody: another sender may hold it now.
            if !configuration.validateOnly && lost.remove(message.id) != nil {
                held.remove(message.id)
                continue
            }
            lanes[lane].sending += 1
            sending[message.id] = (message, lane)
            actions.append(.send(message, lane: lane))
        }
    }

    /// The lane with the most free requests (then the most room), or nil when none has room.
    private func roomiestLane() -> Int? {
        var best: Int?
        var bestFree = 0, bestRoom = 0
        for index in lanes.indices where lanes[index].hasRoom {
            let free = lanes[index].capacity - lanes[index].sending
            let room = lanes[index].open - lanes[index].sending - lanes[index].unsettled
            if best == nil || free > bestFree || (free == bestFree && room > bestRoom) {
                best = index
                bestFree = free
                bestRoom = room
            }
        }
        return best
    }

    /// The next instant something waits for: an extension, the hold's end, the pacer's slot, the next
    /// lease after an empty one, the next backlog question.
    private func nextWake(_ now: Instant) -> Instant? {
        var candidates: [Instant] = []
        if let due = nextExtension { candidates.append(due) }
        if phase == .running {
            if buffered > 0 && roomiestLane() != nil {
                if let until = holdUntil, until > now {
                    candidates.append(until)
                } else if let pacer {
                    candidates.append(now.advanced(by: max(pacer.delay(now: now), .milliseconds(1))))
                }
            }
            if buffered < configuration.refillBelow, let empty = emptyLeaseAt { candidates.append(empty.advanced(by: configuration.pollInterval)) }
            if configuration.drain, emptyLeaseAt != nil {
                candidates.append(backlogAskedAt.map { $0.advanced(by: configuration.idleCheck) } ?? now)
            }
        }
        return candidates.filter { $0 > now }.min()
    }
}
