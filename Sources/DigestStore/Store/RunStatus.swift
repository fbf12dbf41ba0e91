public import DigestCore

/// A week's run, as `digest run --status` shows it.
///
/// On SQLite a week has one run, which walks the users in order (`chunks` is `nil`); on PostgreSQL
/// any number of processes share it by claiming chunks of users (`chunks` says how far they got).
public struct RunStatus: Sendable, Codable, Hashable {
    /// A shared run's chunks.
    public struct Chunks: Sendable, Codable, Hashable {
        /// Chunks the week was split into.
        public var total: Int
        /// Chunks whose messages are in the outbox.
        public var done: Int
        /// Chunks a live worker holds.
        public var claimed: Int
        /// Chunks whose worker stopped renewing the lease (another will claim them).
        public var expired: Int
        /// Workers holding chunks now.
        public var workers: Int
        /// Claims so far (more than `total` when chunks were redone after a worker died).
        public var claims: Int

        public init(total: Int, done: Int, claimed: Int, expired: Int, workers: Int, claims: Int) {
            self.total = total
            self.done = done
            self.claimed = claimed
            self.expired = expired
            self.workers = workers
            self.claims = claims
        }

        /// Chunks nobody has finished or holds (expired ones included).
        public var left: Int { total - done - claimed }
    }

    public var week: String
    /// `running` or `done`.
    public var state: String
    /// Users when the run started (PostgreSQL: when the week was split); users looked at so far on SQLite.
    public var users: Int
    public var startedAt: Int64
    /// What the run's batches did so far.
    public var counters: RunCounters
    public var chunks: Chunks?

    public init(week: String, state: String, users: Int, startedAt: Int64, counters: RunCounters, chunks: Chunks?) {
        self.week = week
        self.state = state
        self.users = users
        self.startedAt = startedAt
        self.counters = counters
        self.chunks = chunks
    }

    /// One line for `digest run --status`.
    public var line: String {
        guard let chunks else {
            return "\(week): \(state), \(counters.users) users looked at, \(counters.digested) digested, \(counters.enqueued) messages enqueued"
        }
        let workers = "\(chunks.workers) worker\(chunks.workers == 1 ? "" : "s")"
        return "\(week): \(state), \(chunks.total) chunks of \(users) users: \(chunks.done) done, \(chunks.claimed) claimed by \(workers), \(chunks.expired) with an expired lease, \(chunks.left - chunks.expired) left (\(chunks.claims) claims)"
    }
}
