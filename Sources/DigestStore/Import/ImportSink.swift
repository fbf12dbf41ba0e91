public import DigestCore
import Foundation

// What the store takes from an import: the kinds of file, the batches of validated records and what
// became of them. Reading and checking the files is DigestImport's.

/// The three input files (docs/010-input-files.md).
public enum ImportKind: String, Sendable, CaseIterable, Codable {
    case users, articles, reads

    /// The kind a file name announces (`users.jsonl`, `2026-11-reads.jsonl`), if any.
    public init?(fileName: String) {
        let name = (fileName as NSString).lastPathComponent.lowercased()
        guard let kind = ImportKind.allCases.first(where: { name.contains($0.rawValue) }) else { return nil }
        self = kind
    }
}

/// Where imported records go: each backend writes a batch idempotently, in one transaction, records
/// in the order given (a later record of the same id wins).
public protocol HistoryImportSink: Sendable {
    /// Writes one batch and says what became of its records.
    func write(_ batch: ImportBatch) async throws -> ImportBatchResult
    /// ``write(_:)`` by the import's clock: `now` (Unix seconds) is when the batch is stored, which
    /// a preference change records and whose ISO week (UTC) a new pace counts from
    /// (``ReaderPreferences/resolvingFrom(stored:currentWeek:)``). The default ignores it.
    func write(_ batch: ImportBatch, at now: Int64) async throws -> ImportBatchResult
}

extension HistoryImportSink {
    public func write(_ batch: ImportBatch, at now: Int64) async throws -> ImportBatchResult {
        try await write(batch)
    }
}

/// Validated records of one kind, as the importer hands them to a sink.
public enum ImportBatch: Sendable {
    case users([ImportedUser])
    case articles([Article])
    case reads([ImportedRead])

    /// How many records the batch holds.
    public var count: Int {
        switch self {
        case .users(let users): users.count
        case .articles(let articles): articles.count
        case .reads(let reads): reads.count
        }
    }
}

/// A read as imported: ids as the file names them.
extension ImportBatch {
    /// Readers as a `users.jsonl` line without `preferences` gives them: their stored preferences
    /// stay, `off` set to ``Reader/optedOut``.
    public static func users(_ readers: [Reader]) -> ImportBatch {
        .users(readers.map { ImportedUser(reader: $0, preferences: nil, off: $0.optedOut) })
    }
}

/// A `users.jsonl` line as the store takes it: the reader, with what the line says of their
/// preferences (docs/010). ``reader``'s own ``Reader/preferences`` are not stored.
public struct ImportedUser: Sendable, Hashable {
    public var reader: Reader
    /// The line's `preferences`, replacing the stored object whole (absent keys at their defaults);
    /// `nil`: the stored preferences stay as they are.
    public var preferences: ReaderPreferences?
    /// What the line says of `off` (its `optedOut`, or its `preferences`' `off`); `nil`: as stored.
    /// With ``preferences`` it is their ``ReaderPreferences/off``.
    public var off: Bool?

    public init(reader: Reader, preferences: ReaderPreferences?, off: Bool?) {
        self.reader = reader
        self.preferences = preferences
        self.off = preferences?.off ?? off
    }
}

public struct ImportedRead: Sendable, Hashable {
    public var userID: String
    public var articleID: String
    public var readAt: Int64
    public var seconds: Int

    public init(userID: String, articleID: String, readAt: Int64, seconds: Int) {
        self.userID = userID
        self.articleID = articleID
        self.readAt = readAt
        self.seconds = seconds
    }
}

/// What a sink did with a batch.
public struct ImportBatchResult: Sendable, Hashable {
    /// A record the sink could not write.
    public struct Rejection: Sendable, Hashable {
        public enum Reason: String, Sendable, Hashable {
            /// A read of a user the store does not have.
            case unknownUser = "unknown_user"
            /// A read of an article the store does not have.
            case unknownArticle = "unknown_article"
        }

        /// The record's position in the batch.
        public var index: Int
        public var reason: Reason

        public init(index: Int, reason: Reason) {
            self.index = index
            self.reason = reason
        }
    }

    /// New or changed records.
    public var written = 0
    /// Records already stored as they are.
    public var unchanged = 0
    /// Records not written, in batch order.
    public var rejected: [Rejection] = []

    public init(written: Int = 0, unchanged: Int = 0, rejected: [Rejection] = []) {
        self.written = written
        self.unchanged = unchanged
        self.rejected = rejected
    }
}
