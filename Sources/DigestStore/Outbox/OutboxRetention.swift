public import DigestCore

/// How long the outbox keeps settled messages, and the run its old weeks' picks: what
/// `digest queue prune --older-than` and `digest run --retain` delete (`docs/001-outbox-semantics.md`,
/// "Retention").
///
/// A message is settled once it is `sent`, `dead` or `expired`. Its **settle time** is `settled_at`,
/// which the consumers' settle statements write (ack, the last nack, kill, a lease that lapsed with no
/// attempts left, the TTL expiry) and a requeue clears; a row settled before the column existed (or
/// by a consumer that does not write it) counts from `sent_at` when sent, `expires_at` when expired
/// and `available_at` when dead (the last time it was due, just before its last try). Messages whose
/// settle time is more than ``age`` before `now` are deleted; `ready` and `leased` ones never are.
///
/// A week's picks (`digest_picks`, which the no-repeat rule reads) go once the last digest that reads
/// them, the one ``noRepeatWeeks`` weeks later, ended in every zone before the same cutoff
/// (``firstKeptPicksWeek(now:)``). Run bookkeeping (`digest_runs`, `digest_run_chunks`,
/// `digest_zone_runs`) is kept: it is what makes a rerun of an old week enqueue nothing once that
/// week's messages are gone.
///
/// ``age`` may not be shorter than ``minimumAge``, the messages' TTL plus the weeks a digest looks
/// back at: a pruned message can no longer be on its way, and no run that could still read a pruned
/// week's picks, or enqueue a pruned message's week again, is to come.
///
/// ```swift
/// let retention = try OutboxRetention(age: 30 * 86_400)
/// let result = try await database.prune(retention, now: now)   // result.messages["sent"], result.picks
/// ```
public struct OutboxRetention: Sendable, Hashable {
    /// Seconds in a week.
    public static let week: Int64 = 7 * 86_400
    /// How long a message stays deliverable after it is due: its FCM `ttl`, `expires_at − available_at`.
    public static let messageTTL = Int64(NotificationEncoder.Configuration().ttlSeconds)
    /// The weeks before a digest's own whose picks it does not repeat.
    public static let noRepeatWeeks = DigestBuilder.Configuration().noRepeatWeeks
    /// The shortest retention: the TTL plus the digest's own week and its no-repeat weeks (28 days).
    public static let minimumAge = messageTTL + Int64(noRepeatWeeks + 1) * week
    /// The retention `digest queue prune` uses without `--older-than`: eight weeks.
    public static let defaultAge = 8 * week
    /// Rows deleted per transaction unless told otherwise.
    public static let defaultBatchSize = 5000

    /// Settled messages older than this (seconds since their settle time) are deleted.
    public var age: Int64
    /// Rows deleted per transaction: each batch commits on its own, so no lock is held long (and on
    /// SQLite the write-ahead log holds one batch at most).
    public var batchSize: Int
    /// Count what would be deleted and delete nothing.
    public var dryRun: Bool

    /// Refuses an `age` shorter than ``minimumAge`` and a batch size below 1.
    public init(age: Int64 = Self.defaultAge, batchSize: Int = Self.defaultBatchSize, dryRun: Bool = false) throws(RetentionError) {
        guard age >= Self.minimumAge else {
            throw RetentionError(
                given: Self.describe(age),
                reason:
                    "is shorter than the minimum retention of \(Self.describe(Self.minimumAge)): the messages' \(Self.describe(Self.messageTTL)) TTL plus the digest's own week and the \(Self.noRepeatWeeks) weeks whose picks it does not repeat"
            )
        }
        guard batchSize > 0 else { throw RetentionError(given: "batch size \(batchSize)", reason: "is not positive") }
        self.age = age
        self.batchSize = batchSize
        self.dryRun = dryRun
    }

    /// Messages settled before this instant go (Unix seconds).
    public func cutoff(now: Int64) -> Int64 { now - age }

    /// The oldest week whose picks are kept: every earlier week's last reader (the digest
    /// ``noRepeatWeeks`` weeks later) ended in every zone, UTC−12 the last, before ``cutoff(now:)``.
    /// At the minimum age that keeps the current week and at least the six before it.
    public func firstKeptPicksWeek(now: Int64) -> ISOWeek {
        let cutoff = cutoff(now: now)
        // A week ends everywhere at 12:00 UTC on the Monday after it (midnight at UTC−12).
        let lastEnd: Int64 = 12 * 3600
        let shifted = cutoff - lastEnd
        let day = Int(shifted >= 0 ? shifted / 86_400 : (shifted - 86_399) / 86_400)
        // The latest week W + noRepeatWeeks that ended everywhere before the cutoff is the one before the
        // week holding `shifted` (or two before, when `shifted` is that week's very first instant).
        var ended = ISOWeek(containing: CivilDate(daysSinceEpoch: day)).previous
        if Int64(ended.next.monday.daysSinceEpoch) * 86_400 >= shifted { ended = ended.previous }
        var first = ended
        for _ in 0..<Self.noRepeatWeeks { first = first.previous }
        return first.next
    }

    /// `28d`, `36h`, `90m` or `45s`: the largest whole unit up to days.
    public static func describe(_ seconds: Int64) -> String {
        if seconds % 86_400 == 0 { return "\(seconds / 86_400)d" }
        if seconds % 3600 == 0 { return "\(seconds / 3600)h" }
        if seconds % 60 == 0 { return "\(seconds / 60)m" }
        return "\(seconds)s"
    }

    /// `30d`, `8w`, `720h`, `90m`, `3600s` or plain seconds; nil for anything else.
    public static func parse(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": week]
        let (digits, unit) = text.last.flatMap({ units[$0] }).map { (text.dropLast(), $0) } ?? (Substring(text), 1)
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let value = Int64(digits), value >= 0 else { return nil }
        let (seconds, overflow) = value.multipliedReportingOverflow(by: unit)
        return overflow ? nil : seconds
    }
}

/// A retention that cannot be used, with the reason in one line.
public struct RetentionError: Error, CustomStringConvertible, Equatable {
    /// What was refused (`21d`).
    public let given: String
    /// Why, to follow it (`is shorter than the minimum retention of 28d: …`).
    public let reason: String

    public init(given: String, reason: String) {
        self.given = given
        self.reason = reason
    }

    public var description: String { "\(given) \(reason)" }
}

/// What a prune deleted, or with ``OutboxRetention/dryRun`` would delete.
public struct OutboxPruneResult: Sendable, Codable, Hashable {
    /// Messages by state (`sent`, `dead`, `expired`; a state with none is absent).
    public var messages: [String: Int]
    /// `digest_picks` rows (one per user and week).
    public var picks: Int

    public init(messages: [String: Int] = [:], picks: Int = 0) {
        self.messages = messages
        self.picks = picks
    }

    /// Every message.
    public var totalMessages: Int { messages.values.reduce(0, +) }
}
