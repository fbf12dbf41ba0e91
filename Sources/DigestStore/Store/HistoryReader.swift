public import DigestCore

/// A user as stored, with the store's key that orders users into batches.
public struct StoredReader: Sendable {
    /// Increasing key: batches are ranges of it.
    public var key: Int64
    public var reader: Reader

    public init(key: Int64, reader: Reader) {
        self.key = key
        self.reader = reader
    }
}

/// The users a run works on next, and where that leaves the run: the last user's key on SQLite (the
/// run's cursor), the claimed chunk's number on PostgreSQL.
public struct UserBatch: Sendable {
    public var users: [StoredReader]
    public var position: Int64

    public init(users: [StoredReader], position: Int64) {
        self.users = users
        self.position = position
    }
}

/// Reads the history the weekly run and the previews need. Used by one task at a time.
public protocol HistoryReader: Sendable {
    /// The next users of `week`'s run after `cursor` (at most `limit` where the store splits by
    /// count), or `nil` when none are left to do.
    func nextBatch(week: ISOWeek, after cursor: Int64, limit: Int) async throws -> UserBatch?
    /// How many of the week's users are left after `cursor`.
    func countUsers(week: ISOWeek, after key: Int64) async throws -> Int
    /// For each user, their reads at or after the matching `since` instant, oldest first.
    func reads(of users: [StoredReader], since: [Int64]) async throws -> [[ReadEvent]]
    /// For each user, which of `articles` (ids) they read before `before`, whenever that was: the
    /// reads a digest's candidates need beyond those ``reads(of:since:)`` returned, looked up by
    /// article (the reads index on article and user), never by the user's whole history. In any
    /// order; an article read twice may come twice.
    func earlierReads(of users: [StoredReader], among articles: [String], before: Int64) async throws -> [[String]]
    /// For each user, the articles picked for them in the digests of `weeks` (what the ledger kept
    /// of the messages it enqueued: ``OutboxMessage/picks``).
    /// In any order; an article picked in two of `weeks` may come twice.
    func recentPicks(of users: [StoredReader], weeks: [ISOWeek]) async throws -> [[String]]
    /// What `request` asks of each user's history (by default the three queries above in turn).
    func histories(of users: [StoredReader], request: HistoryRequest) async throws -> [ReaderHistory]
    /// Articles published in `[from, until)`.
    func articles(publishedFrom from: Int64, until: Int64) async throws -> [Article]
    /// Whether any read falls in `[from, until)`.
    func hasReads(from: Int64, until: Int64) async throws -> Bool
    /// Rolling runs: the time zones users are in (each once).
    func timeZones() async throws -> [String]
    /// Rolling runs: the next users of `week` (at most `limit`) after the cursors of `zones`, each
    /// zone's in `seq` order (SQLite merges the zones by `seq`), with their devices. A store that
    /// shares the week between processes (PostgreSQL) hands out a claimed chunk of one zone instead,
    /// and its batch's cursor names that chunk.
    func nextBatch(week: ISOWeek, zones: [ZoneCursor], limit: Int) async throws -> ZoneBatch
    /// Rolling runs: how many users of `week` are left after the cursors of `zones`.
    func countUsers(week: ISOWeek, zones: [ZoneCursor]) async throws -> Int
    /// The user with this id, with their devices; `nil` when there is none.
    func user(id: String) async throws -> StoredReader?
    /// Up to `limit` users whose id starts with `prefix`, in id order, with their devices.
    func users(idPrefix prefix: String, limit: Int) async throws -> [StoredReader]
    /// Up to `limit` users whose id sorts after `id` (by its bytes), in that order, with their
    /// devices: every user of the store, a page at a time, without a run's cursor or chunk (a
    /// template comparison reads them so, and claims nothing).
    func users(afterID id: String, limit: Int) async throws -> [StoredReader]
}

/// What a digest asks of each user's history (see ``HistoryReader/histories(of:request:)``).
public struct HistoryRequest: Sendable {
    /// Per user, where their reads start (`Int64.max`: none wanted).
    public var since: [Int64]
    /// The candidate articles whose earlier reads are wanted, read before `before` (`nil`: none).
    public var candidates: [String]
    public var before: Int64?
    /// The weeks whose picks are wanted (none when empty).
    public var pickWeeks: [ISOWeek]

    public init(since: [Int64], candidates: [String], before: Int64?, pickWeeks: [ISOWeek]) {
        self.since = since
        self.candidates = candidates
        self.before = before
        self.pickWeeks = pickWeeks
    }
}

extension HistoryReader {
    /// What `composer` needs of each user: their reads since ``BatchComposer/readsSince(_:)``, the
    /// candidates they read before that, and the previous weeks' picks (three queries a batch).
    public func histories(of users: [StoredReader], for composer: BatchComposer) async throws -> [ReaderHistory] {
        let since = users.map { composer.readsSince($0.reader) }
        // Reads at or after a user's own start come with their reads; one bound for the batch may
        // return a few of those again, which changes nothing.
        let before = since.lazy.filter { $0 != Int64.max }.max()
        let request = HistoryRequest(
            since: since, candidates: composer.candidateIDs, before: before,
            pickWeeks: before == nil ? [] : composer.noRepeatWeeks)
        return try await histories(of: users, request: request)
    }

    /// The reads, earlier reads and picks of `request`, one query after the other (a store may
    /// answer them together, e.g. in one read transaction).
    public func histories(of users: [StoredReader], request: HistoryRequest) async throws -> [ReaderHistory] {
        let reads = try await self.reads(of: users, since: request.since)
        let earlier =
            if let before = request.before {
                try await earlierReads(of: users, among: request.candidates, before: before)
            } else {
                [[String]](repeating: [], count: users.count)
            }
        let picks =
            request.pickWeeks.isEmpty
            ? [[String]](repeating: [], count: users.count) : try await recentPicks(of: users, weeks: request.pickWeeks)
        return (0..<users.count).map { ReaderHistory(reads: reads[$0], readEarlier: earlier[$0], recentPicks: picks[$0]) }
    }
}
