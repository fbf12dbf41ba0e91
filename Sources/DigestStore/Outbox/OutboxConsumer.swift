public import DigestCore

/// The consumer side of the outbox: what a sender does to messages, as in
/// `docs/003-outbox-consumers.md`. Every operation follows ``OutboxDelivery/apply(_:)``.
///
/// Each call is one unit of work (a lease's transaction never interleaves with a settlement's); calls
/// made at once may run at once (PostgreSQL, each on a connection of its own) or in turn (SQLite's
/// writer). The reference sender makes one call at a time anyway. Times are Unix seconds.
///
/// ```swift
/// try await database.withOutboxConsumer { consumer in
///     let batch = try await consumer.lease(owner: "host-1:4711", limit: 128, now: now, leaseSeconds: 60, maxAttempts: 12, providers: [.fcm])
///     // … send each …
///     try await consumer.settle([.sent(id: batch[0].id, name: "projects/p/messages/1")], owner: "host-1:4711", now: now, maxAttempts: 12)
/// }
/// ```
public protocol OutboxConsumer: Sendable {
    /// Returns expired leases to `ready` (or `dead` once their attempts are used up), then leases up to
    /// `limit` due messages of the `providers` the caller can send, oldest `available_at` first, in one
    /// writer transaction. Messages of other providers stay `ready` for a sender that can.
    func lease(
        owner: String, limit: Int, now: Int64, leaseSeconds: Int64, maxAttempts: Int, providers: Set<Provider>
    ) async throws -> [LeasedMessage]

    /// Applies outcomes of messages `owner` holds, in one transaction; returns how many applied (a
    /// message whose lease was lost is left alone).
    @discardableResult
    func settle(_ settlements: [Settlement], owner: String, now: Int64, maxAttempts: Int) async throws -> Int

    /// Moves the leases `owner` holds on `ids` to `until`; returns the ids it still holds (the others'
    /// leases lapsed, and another sender may hold them now).
    @discardableResult
    func extendLeases(ids: [Int64], owner: String, until: Int64) async throws -> Set<Int64>

    /// Returns every dead message (optionally only those whose reason starts with `reasonPrefix`, or of
    /// one week) to `ready`, due now, with no attempts; returns how many.
    func requeueDead(reasonPrefix: String?, week: String?, now: Int64) async throws -> Int

    /// Reads up to `limit` due `ready` messages of the `providers` with ids above `afterID`, in id
    /// order, without leasing them (a dry run's validation pass).
    func peekDue(afterID: Int64, limit: Int, now: Int64, providers: Set<Provider>) async throws -> [LeasedMessage]

    /// What is left for a draining sender that sends the `providers` (nil: every message, whatever
    /// its provider). Messages of other providers are not counted: they wait for a sender that can.
    func backlog(now: Int64, providers: Set<Provider>?) async throws -> OutboxBacklog
}

extension OutboxConsumer {
    /// Every due message, whatever its provider.
    package func peekDue(afterID: Int64, limit: Int, now: Int64) async throws -> [LeasedMessage] {
        try await peekDue(afterID: afterID, limit: limit, now: now, providers: Set(Provider.allCases))
    }

    /// What is left of every provider's messages.
    package func backlog(now: Int64) async throws -> OutboxBacklog {
        try await backlog(now: now, providers: nil)
    }
}

/// A leased message: what a sender needs to deliver it.
public struct LeasedMessage: Sendable, Hashable {
    public var id: Int64
    public var dedupeKey: String
    public var userID: String
    public var platform: String
    /// Exactly what is sent: the FCM v1 request body (`{"message":{…}}`), or the APNs payload.
    public var message: String
    /// Attempts including this one.
    public var attempts: Int
    /// The push service to send it through.
    public var provider: Provider
    /// The token it goes to. Never logged whole.
    public var target: String
    /// The APNs request headers, a JSON object (`nil` for FCM).
    public var headers: String?

    public init(
        id: Int64, dedupeKey: String, userID: String, platform: String, message: String, attempts: Int,
        provider: Provider = .fcm, target: String = "", headers: String? = nil
    ) {
        self.id = id
        self.dedupeKey = dedupeKey
        self.userID = userID
        self.platform = platform
        self.message = message
        self.attempts = attempts
        self.provider = provider
        self.target = target
        self.headers = headers
    }
}

/// The outcome of one delivery attempt, as a consumer records it.
public enum Settlement: Sendable, Hashable {
    /// `sent`, with FCM's message name.
    case sent(id: Int64, name: String)
    /// `ready` again at `at` (Unix seconds), or `dead` once the attempts are used up.
    case retry(id: Int64, at: Int64, error: String)
    /// `dead` with the reason.
    case dead(id: Int64, reason: String)
    /// `dead` with the reason, and the message's target remembered as a dead device (by token, in
    /// `digest_dead_tokens`) since `diedAt` (Unix seconds; nil: now), so the next run skips it until
    /// the app registers it again after that (APNs says since when a token is invalid, and a device
    /// registered after that time is alive).
    case unregistered(id: Int64, reason: String, diedAt: Int64? = nil)
    /// `ready` again, untried: the lease does not count as an attempt. With `until`, not due before
    /// then and `reason` kept as its last error: a message the sender may not send for now (its
    /// push service's host is not allowed, or that service refuses the sender's key), left as it was
    /// for a later look instead of leased again at once.
    case release(id: Int64, until: Int64? = nil, reason: String? = nil)

    public var id: Int64 {
        switch self {
        case .sent(let id, _), .retry(let id, _, _), .dead(let id, _), .unregistered(let id, _, _), .release(let id, _, _): id
        }
    }
}

/// Counts a draining sender watches.
public struct OutboxBacklog: Sendable, Hashable {
    /// `ready` and due now.
    public var due: Int
    /// `ready`, not yet due, and tried before: retries waiting for their time.
    public var retrying: Int
    /// `leased` by anyone.
    public var leased: Int
    /// `ready`, never tried, not due yet: waiting for their delivery time or held through the
    /// reader's quiet hours.
    public var waiting: Int
    /// The earliest `available_at` of the ready messages not due yet (`nil`: none).
    public var nextDue: Int64?

    public init(due: Int = 0, retrying: Int = 0, leased: Int = 0, waiting: Int = 0, nextDue: Int64? = nil) {
        self.due = due
        self.retrying = retrying
        self.leased = leased
        self.waiting = waiting
        self.nextDue = nextDue
    }

    /// Nothing due, waiting to be retried, or held (messages waiting for a later delivery time do not
    /// count: a draining sender stops and says how many wait until when).
    public var isEmpty: Bool { due == 0 && retrying == 0 && leased == 0 }
}
