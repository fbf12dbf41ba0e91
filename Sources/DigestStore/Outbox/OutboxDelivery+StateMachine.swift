extension OutboxDelivery {
    /// Something a consumer (or an operator) does to a message.
    public enum Event: Sendable, Hashable {
        /// Take a due message until `until`.
        case lease(owner: String, now: Int64, until: Int64)
        /// Keep holding it.
        case extend(owner: String, until: Int64)
        /// FCM accepted it.
        case ack(owner: String, name: String, now: Int64)
        /// It failed for now: try again at `retryAt`, unless the attempts are used up (then it is
        /// dead, settled at `now`).
        case nack(owner: String, retryAt: Int64, error: String, maxAttempts: Int, now: Int64)
        /// It can never succeed (settled at `now`).
        case kill(owner: String, reason: String, now: Int64)
        /// Give it back untried (shutdown): the lease does not count as an attempt.
        case release(owner: String)
        /// Its holder vanished: the lease ran out.
        case expire(now: Int64, maxAttempts: Int)
        /// An operator sends a dead message again.
        case requeue(now: Int64)
        /// A consumer looks at the clock (before each lease, and for its backlog): a ready message
        /// past its TTL expires; one whose window ended unsent waits through the quiet hours.
        case settleWindow(now: Int64)
    }

    /// Why an event did not apply.
    public enum Refusal: Error, Sendable, Hashable {
        /// `lease` of a message that is not `ready` or not yet due.
        case notDue
        /// A holder's event on a message it does not hold (never leased, settled, or reclaimed).
        case notHolder
        /// `expire` of a message whose lease still runs, or that is not leased.
        case notExpired
        /// `requeue` of a message that is not dead.
        case notDead
        /// `settleWindow` of a message that is not ready, or still inside its window and its TTL.
        case inWindow
    }

    /// Applies `event`; on refusal the value is unchanged.
    @discardableResult
    public mutating func apply(_ event: Event) -> Result<State, Refusal> {
        switch event {
        case .lease(let owner, let now, let until):
            guard isDue(now: now) else { return .failure(.notDue) }
            state = .leased
            attempts += 1
            leaseOwner = owner
            leasedUntil = until
        case .extend(let owner, let until):
            guard holds(owner) else { return .failure(.notHolder) }
            leasedUntil = until
        case .ack(let owner, let name, let now):
            guard holds(owner) else { return .failure(.notHolder) }
            state = .sent
            sentAt = now
            settledAt = now
            fcmName = name
            dropLease()
        case .nack(let owner, let retryAt, let error, let maxAttempts, let now):
            guard holds(owner) else { return .failure(.notHolder) }
            if attempts >= maxAttempts {
                state = .dead
                lastError = Self.exhausted(error, attempts: attempts)
                settledAt = now
            } else {
                state = .ready
                availableAt = retryAt
                lastError = error
            }
            dropLease()
        case .kill(let owner, let reason, let now):
            guard holds(owner) else { return .failure(.notHolder) }
            state = .dead
            lastError = reason
            settledAt = now
            dropLease()
        case .release(let owner):
            guard holds(owner) else { return .failure(.notHolder) }
            state = .ready
            attempts = max(0, attempts - 1)
            dropLease()
        case .expire(let now, let maxAttempts):
            guard isExpired(now: now) else { return .failure(.notExpired) }
            if attempts >= maxAttempts {
                state = .dead
                lastError = Self.exhausted("LEASE_EXPIRED: the sender holding it stopped answering", attempts: attempts)
                settledAt = now
            } else {
                state = .ready
            }
            dropLease()
        case .requeue(let now):
            guard state == .dead else { return .failure(.notDead) }
            state = .ready
            attempts = 0
            availableAt = now
            settledAt = nil
        case .settleWindow(let now):
            guard state == .ready else { return .failure(.inWindow) }
            if let expiresAt, expiresAt <= now {
                state = .expired
                lastError = "EXPIRED: not sent before its TTL ended at \(Timestamp.format(expiresAt))"
                settledAt = now
            } else if let windowEnd, let quietUntil, windowEnd <= now {
                // The window moves on by whole days until it ends after now; the message is due when
                // the quiet hours before that window end (at once when that has passed).
                let days = (now - windowEnd) / 86_400
                availableAt = max(availableAt, quietUntil + days * 86_400)
                self.windowEnd = windowEnd + (days + 1) * 86_400
                self.quietUntil = quietUntil + (days + 1) * 86_400
            } else {
                return .failure(.inWindow)
            }
        }
        return .success(state)
    }

    /// The reason of a message whose attempts ran out (SQL backends write the same text).
    public static func exhausted(_ error: String, attempts: Int) -> String {
        "\(error) (gave up after \(attempts) attempts)"
    }

    private func holds(_ owner: String) -> Bool { state == .leased && leaseOwner == owner }

    private mutating func dropLease() {
        leaseOwner = nil
        leasedUntil = nil
    }
}
