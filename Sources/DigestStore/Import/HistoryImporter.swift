public import DigestCore
import Foundation

/// The three input files of DESIGN.md ("Input").
public enum ImportKind: String, Sendable, CaseIterable, Codable {
    case users, articles, reads

    /// The kind a file name announces (`users.jsonl`, `2026-11-reads.jsonl`), if any.
    public init?(fileName: String) {
        let name = (fileName as NSString).lastPathComponent.lowercased()
        guard let kind = ImportKind.allCases.first(where: { name.contains($0.rawValue) }) else { return nil }
        self = kind
    }
}

/// Where imported records go; each backend writes them idempotently.
public protocol HistoryImportSink: AnyObject {
    func beginBatch() throws
    func commitBatch() throws
    /// `true` when the user was new or changed.
    func upsert(user: Reader) throws -> Bool
    /// `true` when the article was new or changed.
    func upsert(article: Article) throws -> Bool
    func insertRead(userID: String, articleID: String, readAt: Int64, seconds: Int) throws -> ReadInsertOutcome
    /// `true` when reads are queued (``queueRead(_:)``) and written in bulk by ``flushReads()``
    /// before each commit, instead of one ``insertRead`` round trip a line.
    var writesReadsInBulk: Bool { get }
    func queueRead(_ read: QueuedRead) throws
    /// Writes the queued reads; returns each one's outcome.
    func flushReads() throws -> [(read: QueuedRead, outcome: ReadInsertOutcome)]
    /// Queues a user (and their devices) for ``flushUsers()`` when the sink writes in bulk.
    func queueUser(_ user: Reader) throws
    /// Writes the queued users; returns how many were new or changed and how many were as stored.
    func flushUsers() throws -> (written: Int, unchanged: Int)
}

extension HistoryImportSink {
    public var writesReadsInBulk: Bool { false }
    public func queueRead(_ read: QueuedRead) throws {
        throw ImportError(file: "", line: read.line, reason: "this store writes reads one at a time")
    }
    public func flushReads() throws -> [(read: QueuedRead, outcome: ReadInsertOutcome)] { [] }
    public func queueUser(_ user: Reader) throws {
        throw ImportError(file: "", line: nil, reason: "this store writes users one at a time")
    }
    public func flushUsers() throws -> (written: Int, unchanged: Int) { (0, 0) }
}

/// A read waiting for its batch's bulk write, with the line it came from.
public struct QueuedRead: Sendable {
    public var line: Int
    public var userID: String
    public var articleID: String
    public var readAt: Int64
    public var seconds: Int
}

/// What became of one read.
public enum ReadInsertOutcome: Sendable {
    case inserted, duplicate, unknownUser, unknownArticle
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
/// per batch. Bad lines are reported and skipped, or stop the import when `strict`.
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

    public func importFile(_ path: String, as kind: ImportKind) throws -> ImportFileSummary {
        let reader = try LineReader(path: path)
        var summary = ImportFileSummary(file: path, kind: kind)
        let decoder = JSONDecoder()
        var inBatch = 0
        try sink.beginBatch()
        do {
            while let bytes = reader.next() {
                summary.lines += 1
                if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
                do {
                    try importLine(bytes, kind: kind, decoder: decoder, summary: &summary)
                } catch let problem as LineProblem {
                    let error = ImportError(file: path, line: summary.lines, reason: problem.reason)
                    if strict { throw error }
                    onProblem(error)
                }
                inBatch += 1
                if inBatch >= batchSize {
                    try flush(path, &summary)
                    try sink.commitBatch()
                    onProgress(path, summary.lines)
                    try sink.beginBatch()
                    inBatch = 0
                }
            }
            try flush(path, &summary)
            try sink.commitBatch()
        } catch {
            try? sink.commitBatch()
            throw error
        }
        return summary
    }

    /// Writes a bulk sink's queued reads and counts their outcomes; unknown users and articles are
    /// reported with their lines (under `strict`, the first stops the import at the batch's end).
    private func flush(_ path: String, _ summary: inout ImportFileSummary) throws {
        guard sink.writesReadsInBulk else { return }
        let users = try sink.flushUsers()
        summary.written += users.written
        summary.unchanged += users.unchanged
        var firstProblem: ImportError?
        for (read, outcome) in try sink.flushReads() {
            let problem: (String, String)
            switch outcome {
            case .inserted: summary.written += 1; continue
            case .duplicate: summary.unchanged += 1; continue
            case .unknownUser: problem = ("unknown_user", "unknown user '\(read.userID)'")
            case .unknownArticle: problem = ("unknown_article", "unknown article '\(read.articleID)'")
            }
            summary.skipped[problem.0, default: 0] += 1
            let error = ImportError(file: path, line: read.line, reason: problem.1)
            if strict { firstProblem = firstProblem ?? error } else { onProblem(error) }
        }
        if let firstProblem { throw firstProblem }
    }

    private func importLine(
        _ bytes: [UInt8], kind: ImportKind, decoder: JSONDecoder, summary: inout ImportFileSummary
    ) throws {
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
            let user = try validated { () throws(LineProblem) in try record.validated() }
            if sink.writesReadsInBulk {
                try sink.queueUser(user)
                return
            }
            if try sink.upsert(user: user) { summary.written += 1 } else { summary.unchanged += 1 }
        case .articles:
            let record = try decode(ArticleRecord.self)
            let article = try validated { () throws(LineProblem) in try record.validated() }
            if try sink.upsert(article: article) { summary.written += 1 } else { summary.unchanged += 1 }
        case .reads:
            let record = try decode(ReadRecord.self)
            let read = try validated { () throws(LineProblem) in try record.validated() }
            if sink.writesReadsInBulk {
                try sink.queueRead(
                    QueuedRead(line: summary.lines, userID: read.user, articleID: read.article, readAt: read.readAt, seconds: read.seconds))
                return
            }
            switch try sink.insertRead(userID: read.user, articleID: read.article, readAt: read.readAt, seconds: read.seconds) {
            case .inserted: summary.written += 1
            case .duplicate: summary.unchanged += 1
            case .unknownUser: throw skip("unknown_user", "unknown user '\(read.user)'", &summary)
            case .unknownArticle: throw skip("unknown_article", "unknown article '\(read.article)'", &summary)
            }
        }
    }

    private func skip(_ key: String, _ reason: String, _ summary: inout ImportFileSummary) -> LineProblem {
        summary.skipped[key, default: 0] += 1
        return LineProblem(reason)
    }
}
