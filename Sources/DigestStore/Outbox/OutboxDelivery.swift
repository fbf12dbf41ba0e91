/// The delivery bookkeeping of one outbox message: the columns a consumer changes.
///
/// ``OutboxDelivery/apply(_:)`` is the lifecycle every backend's SQL follows (see
/// `docs/003-outbox-consumers.md`): `ready` → `leased` → `sent`, or back to `ready` (nack, release,
/// expired lease), or `dead`; `dead` → `ready` only by an operator's requeue; `ready` → `expired`
/// once its TTL has ended unsent. A message with a delivery window (docs/001) that ended unsent
/// waits, `ready`, through the reader's quiet hours. A message that reaches `sent`, `dead` or
/// `expired` records when (``settledAt``): retention (``OutboxRetention``) counts its age from then.
public struct OutboxDelivery: Sendable, Hashable {
    /// The `state` column.
    public enum State: String, Sendable, Hashable, CaseIterable {
        case ready, leased, sent, dead, expired
    }

    public var state: State
    /// Leases taken so far (a lease counts as an attempt until released unused).
    public var attempts: Int
    /// Not to be sent before (Unix seconds).
    public var availableAt: Int64
    public var leaseOwner: String?
    /// The lease holds until then (Unix seconds); afterwards anyone's lease call may reclaim it.
    public var leasedUntil: Int64?
    /// The last failure, or the reason a message is dead: `CODE: detail`.
    public var lastError: String?
    public var sentAt: Int64?
    /// FCM's name of the sent message (`projects/…/messages/…`).
    public var fcmName: String?
    /// The end of the hours it may be sent in (the reader's quiet hours begin), Unix seconds; `nil`:
    /// no window (`--send-at now`).
    public var windowEnd: Int64?
    /// When the quiet hours after ``windowEnd`` end.
    public var quietUntil: Int64?
    /// When its TTL ends: not sent by then, it never is.
    public var expiresAt: Int64?
    /// When it became `sent`, `dead` or `expired` (Unix seconds); `nil` while `ready` or `leased`
    /// (a requeue clears it).
    public var settledAt: Int64?

    public init(
        state: State = .ready, attempts: Int = 0, availableAt: Int64, leaseOwner: String? = nil,
        leasedUntil: Int64? = nil, lastError: String? = nil, sentAt: Int64? = nil, fcmName: String? = nil,
        windowEnd: Int64? = nil, quietUntil: Int64? = nil, expiresAt: Int64? = nil, settledAt: Int64? = nil
    ) {
        self.settledAt = settledAt
        self.windowEnd = windowEnd
        self.quietUntil = quietUntil
        self.expiresAt = expiresAt
        self.state = state
        self.attempts = attempts
        self.availableAt = availableAt
        self.leaseOwner = leaseOwner
        self.leasedUntil = leasedUntil
        self.lastError = lastError
        self.sentAt = sentAt
        self.fcmName = fcmName
    }

    /// `ready` and its time has come.
    public func isDue(now: Int64) -> Bool { state == .ready && availableAt <= now }

    /// `leased` and its lease has run out.
    public func isExpired(now: Int64) -> Bool { state == .leased && (leasedUntil ?? .min) <= now }
}
