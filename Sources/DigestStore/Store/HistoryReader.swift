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

/// Reads the history the weekly run needs. One instance is used by one thread at a time.
public protocol HistoryReader: AnyObject {
    /// Up to `limit` users with keys above `key`, in key order, with their devices.
    func users(after key: Int64, limit: Int) throws -> [StoredReader]
    /// For each user, their reads at or after the matching `since` instant, oldest first.
    func reads(of users: [StoredReader], since: [Int64]) throws -> [[ReadEvent]]
    /// Articles published in `[from, until)`.
    func articles(publishedFrom from: Int64, until: Int64) throws -> [Article]
    /// How many users have keys above `key`.
    func countUsers(after key: Int64) throws -> Int
    /// Whether any read falls in `[from, until)`.
    func hasReads(from: Int64, until: Int64) throws -> Bool
    /// The user with this id, with their devices; `nil` when there is none.
    func user(id: String) throws -> StoredReader?
    /// Up to `limit` users whose id starts with `prefix`, in id order, with their devices.
    func users(idPrefix prefix: String, limit: Int) throws -> [StoredReader]
}
