public import DigestCore
import Foundation

/// The three input files (README, "Command line": the formats under `digest import`).
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
}

/// Validated records of one kind, as the importer hands them to a sink.
public enum ImportBatch: Sendable {
    case users([Reader])
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

/// One file's import result.
public struct ImportFileSummary: Sendable, Codable, Hashable {
    public var file: String
    public var kind: ImportKind
    public var lines = 0
    /// New or changed records.
    public var written = 0
    /// Records already present as they are.
    public var unchanged = 0
    /// Lines skipped, by reason (`invalid`, `unknown_user`, `unknown_article`).
    public var skipped: [String: Int] = [:]

    public init(file: String, kind: ImportKind) {
        self.file = file
        self.kind = kind
    }
}

/// A bad line (with `--strict`, the error that stops the import) or an unusable file.
public struct ImportError: Error, CustomStringConvertible {
    public let file: String
    public let line: Int?
    public let reason: String

    public init(file: String, line: Int?, reason: String) {
        self.file = file
        self.line = line
        self.reason = reason
    }

    public var description: String { line.map { "\(file):\($0): \(reason)" } ?? "\(file): \(reason)" }
}

/// Streams JSON Lines files into a sink in batches: one line in memory at a time, one transaction
/// per batch. Bad lines are reported and skipped, or stop the import when `strict` (the lines before
/// the bad one are written first; a read of an unknown user or article stops it once its batch is
/// written).
///
/// ```swift
/// let summary = try await database.withImportSink { sink in
///     try await HistoryImporter(sink: sink).importFile("users.jsonl", as: .users)
/// }
/// ```
public struct HistoryImporter<Sink: HistoryImportSink> {
    public let sink: Sink
    public var batchSize = 5_000
    public var strict = false
    /// Called for each skipped line.
    public var onProblem: (ImportError) -> Void = { _ in }
    /// Called every `batchSize` lines with the lines read so far in the file.
    public var onProgress: (String, Int) -> Void = { _, _ in }

    public init(sink: Sink) {
        self.sink = sink
    }

    public func importFile(_ path: String, as kind: ImportKind) async throws -> ImportFileSummary {
        let reader = try LineReader(path: path)
        var summary = ImportFileSummary(file: path, kind: kind)
        var pending = PendingBatch(kind: kind)
        let decoder = JSONDecoder()
        var inBatch = 0
        while let bytes = reader.next() {
            summary.lines += 1
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            do {
                try parseLine(bytes, kind: kind, decoder: decoder, summary: &summary, into: &pending)
            } catch {
                let error = ImportError(file: path, line: summary.lines, reason: error.reason)
                if strict {
                    try await write(&pending, path, &summary)
                    throw error
                }
                onProblem(error)
            }
            inBatch += 1
            if inBatch >= batchSize {
                try await write(&pending, path, &summary)
                onProgress(path, summary.lines)
                inBatch = 0
            }
        }
        try await write(&pending, path, &summary)
        return summary
    }

    /// The records parsed since the last write, with the lines they came from.
    private struct PendingBatch {
        var users: [Reader] = []
        var articles: [Article] = []
        var reads: [ImportedRead] = []
        var lines: [Int] = []
        let kind: ImportKind

        init(kind: ImportKind) { self.kind = kind }

        var batch: ImportBatch {
            switch kind {
            case .users: .users(users)
            case .articles: .articles(articles)
            case .reads: .reads(reads)
            }
        }

        mutating func removeAll() {
            users.removeAll(keepingCapacity: true)
            articles.removeAll(keepingCapacity: true)
            reads.removeAll(keepingCapacity: true)
            lines.removeAll(keepingCapacity: true)
        }
    }

    /// Writes the pending records and counts their outcomes; rejected reads are reported with their
    /// lines (under `strict`, the first stops the import once the batch is written).
    private func write(_ pending: inout PendingBatch, _ path: String, _ summary: inout ImportFileSummary) async throws {
        guard !pending.lines.isEmpty else { return }
        let result = try await sink.write(pending.batch)
        summary.written += result.written
        summary.unchanged += result.unchanged
        var firstProblem: ImportError?
        for rejection in result.rejected {
            let reason: String
            switch (rejection.reason, pending.batch) {
            case (.unknownUser, .reads(let reads)): reason = "unknown user '\(reads[rejection.index].userID)'"
            case (.unknownArticle, .reads(let reads)): reason = "unknown article '\(reads[rejection.index].articleID)'"
            default: reason = rejection.reason.rawValue
            }
            summary.skipped[rejection.reason.rawValue, default: 0] += 1
            let error = ImportError(file: path, line: pending.lines[rejection.index], reason: reason)
            if strict { firstProblem = firstProblem ?? error } else { onProblem(error) }
        }
        pending.removeAll()
        if let firstProblem { throw firstProblem }
    }

    private func parseLine(
        _ bytes: [UInt8], kind: ImportKind, decoder: JSONDecoder, summary: inout ImportFileSummary,
        into pending: inout PendingBatch
    ) throws(LineProblem) {
        func decode<T: Decodable>(_ type: T.Type) throws(LineProblem) -> T {
            guard String(validating: bytes, as: UTF8.self) != nil else { throw skip("invalid", "not valid UTF-8", &summary) }
            do {
                return try decoder.decode(T.self, from: Data(bytes))
            } catch let DecodingError.keyNotFound(key, _) {
                throw skip("invalid", "missing field '\(key.stringValue)'", &summary)
            } catch let DecodingError.typeMismatch(_, context) {
                let field = context.codingPath.map(\.stringValue).joined(separator: ".")
                throw skip("invalid", "wrong type for '\(field)'", &summary)
            } catch let DecodingError.valueNotFound(_, context) {
                let field = context.codingPath.map(\.stringValue).joined(separator: ".")
                throw skip("invalid", "null '\(field)'", &summary)
            } catch {
                throw skip("invalid", "not a JSON object", &summary)
            }
        }
        func validated<T>(_ body: () throws(LineProblem) -> T) throws(LineProblem) -> T {
            do { return try body() } catch { throw skip("invalid", error.reason, &summary) }
        }
        switch kind {
        case .users:
            let record = try decode(UserRecord.self)
            pending.users.append(try validated { () throws(LineProblem) in try record.validated() })
        case .articles:
            let record = try decode(ArticleRecord.self)
            pending.articles.append(try validated { () throws(LineProblem) in try record.validated() })
        case .reads:
            let record = try decode(ReadRecord.self)
            let read = try validated { () throws(LineProblem) in try record.validated() }
            pending.reads.append(ImportedRead(userID: read.user, articleID: read.article, readAt: read.readAt, seconds: read.seconds))
        }
        pending.lines.append(summary.lines)
    }

    private func skip(_ key: String, _ reason: String, _ summary: inout ImportFileSummary) -> LineProblem {
        summary.skipped[key, default: 0] += 1
        return LineProblem(reason)
    }
}
