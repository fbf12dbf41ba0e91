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
    /// Articles published in `[from, until)`.
    func articles(publishedFrom from: Int64, until: Int64) async throws -> [Article]
    /// Whether any read falls in `[from, until)`.
    func hasReads(from: Int64, until: Int64) async throws -> Bool
    /// The user with this id, with their devices; `nil` when there is none.
    func user(id: String) async throws -> StoredReader?
    /// Up to `limit` users whose id starts with `prefix`, in id order, with their devices.
    func users(idPrefix prefix: String, limit: Int) async throws -> [StoredReader]
}
