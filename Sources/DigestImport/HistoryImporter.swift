import DigestCore
package import DigestStore
import Foundation

/// One file's import result.
package struct ImportFileSummary: Sendable, Codable, Hashable {
    package var file: String
    package var kind: ImportKind
    /// Lines read, blank ones included.
    package var lines = 0
    /// New or changed records.
    package var written = 0
    /// Records already present as they are.
    package var unchanged = 0
    /// Lines skipped, by ``ImportSkipReason`` name (`bad_id`, `unknown_user`, …). A `duplicate_id`
    /// line may have been written before the later line of its id replaced it.
    package var skipped: [String: Int] = [:]
    /// Users files: readers whose line (the last of their id) lists more than
    /// ``DeviceSelection/limit`` distinct tokens (`devices_over_limit`). Imported with every device,
    /// not skipped: a run sends to the limit of them (``DeviceSelection``).
    package var devicesOverLimit = 0

    package init(file: String, kind: ImportKind) {
        self.file = file
        self.kind = kind
    }
}

/// A skipped line (with `--strict`, the error that stops the import) or an unusable file.
package struct ImportError: Error, CustomStringConvertible {
    package let file: String
    package let line: Int?
    /// Why the line was skipped; `nil` for a file that cannot be read.
    package let code: ImportSkipReason?
    package let reason: String

    package init(file: String, line: Int?, code: ImportSkipReason? = nil, reason: String) {
        self.file = file
        self.line = line
        self.code = code
        self.reason = reason
    }

    /// `file:line: code: reason`.
    package var description: String {
        let what = code.map { "\($0.rawValue): \(reason)" } ?? reason
        return line.map { "\(file):\($0): \(what)" } ?? "\(file): \(what)"
    }
}

/// Streams JSON Lines files into a sink in batches: one line in memory at a time, one transaction
/// per batch. Every line is imported or skipped with its reason (``ImportSkipReason``, the rules in
/// docs/008-import.md); a bad line stops the import only when `strict` (the lines before it are
/// written first; a read of an unknown user or article stops it once its batch is written). Of lines
/// giving the same user or article id, the last wins and each earlier one is reported as
/// `duplicate_id` (under `strict` too, without stopping); to tell, the importer remembers each id of
/// the file with its line. A reader listed with more devices than a run sends to is imported whole and
/// counted (``ImportFileSummary/devicesOverLimit``), never skipped, under `strict` too.
///
/// ```swift
/// let summary = try await database.withImportSink { sink in
///     try await HistoryImporter(sink: sink).importFile("users.jsonl", as: .users)
/// }
/// ```
package struct HistoryImporter<Sink: HistoryImportSink> {
    package let sink: Sink
    package var batchSize = 5_000
    package var strict = false
    /// Called for each skipped line.
    package var onProblem: (ImportError) -> Void = { _ in }
    /// Called every `batchSize` lines with the lines read so far in the file.
    package var onProgress: (String, Int) -> Void = { _, _ in }
    /// The import's clock (Unix seconds), read for each batch: when its preference changes are
    /// recorded, and the week a new pace counts from (``HistoryImportSink/write(_:at:)``).
    package var now: () -> Int64 = { Int64(Date().timeIntervalSince1970) }

    package init(sink: Sink) {
        self.sink = sink
    }

    package func importFile(_ path: String, as kind: ImportKind) async throws -> ImportFileSummary {
        let reader = try LineReader(path: path)
        var summary = ImportFileSummary(file: path, kind: kind)
        var pending = PendingBatch(kind: kind)
        // The line of each user or article id of the file whose record stands so far.
        var lineOfID: [String: Int] = [:]
        // The readers whose standing line lists more devices than a run sends to.
        var overLimit = Set<String>()
        var inBatch = 0
        while let line = try reader.next() {
            summary.lines += 1
            do {
                if let record = try Self.record(from: line, kind: kind) {
                    if let id = record.id {
                        if let earlier = lineOfID.updateValue(summary.lines, forKey: id) {
                            summary.skipped[ImportSkipReason.duplicateID.rawValue, default: 0] += 1
                            pending.supersede(id: id)
                            onProblem(ImportError(
                                file: path, line: earlier, code: .duplicateID,
                                reason: "\(kind.noun) \(ImportFieldRules.quote(id)) again on line \(summary.lines), which wins"))
                        }
                    }
                    if case .user(let imported) = record {
                        let user = imported.reader
                        if user.devices.count > DeviceSelection.limit {
                            overLimit.insert(user.id)
                        } else if !overLimit.isEmpty {
                            overLimit.remove(user.id)
                        }
                    }
                    pending.append(record, line: summary.lines)
                }
            } catch {
                summary.skipped[error.code.rawValue, default: 0] += 1
                let problem = ImportError(file: path, line: summary.lines, code: error.code, reason: error.reason)
                if strict {
                    try await write(&pending, path, &summary)
                    throw problem
                }
                onProblem(problem)
            }
            inBatch += 1
            if inBatch >= batchSize {
                try await write(&pending, path, &summary)
                onProgress(path, summary.lines)
                inBatch = 0
                // Cancelled (SIGTERM): stop between batches; what is written stays, a rerun does the rest.
                try Task.checkCancellation()
            }
        }
        try await write(&pending, path, &summary)
        summary.devicesOverLimit = overLimit.count
        return summary
    }

    /// One record of a file.
    enum Record {
        case user(ImportedUser)
        case article(Article)
        case read(ImportedRead)

        /// The id a later line of the file may give again (reads have none).
        var id: String? {
            switch self {
            case .user(let user): user.reader.id
            case .article(let article): article.id
            case .read: nil
            }
        }
    }

    /// The record of a line, or `nil` for a blank line. A byte-order mark at the start of a line is
    /// dropped.
    static func record(from line: LineReader.Line, kind: ImportKind) throws(LineProblem) -> Record? {
        guard case .bytes(var bytes) = line else {
            if case .tooLong(let length) = line {
                throw LineProblem(.lineTooLong, "a line of \(length) bytes, over the limit of \(ImportLimits.maxLineBytes)")
            }
            return nil
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return nil }
        let fields = try JSONFields(line: JSONLineParser.parse(bytes))
        switch kind {
        case .users: return .user(try ImportRecords.user(fields))
        case .articles: return .article(try ImportRecords.article(fields))
        case .reads: return .read(try ImportRecords.read(fields))
        }
    }

    /// The records parsed since the last write, with the lines they came from.
    private struct PendingBatch {
        var users: [ImportedUser] = []
        var articles: [Article] = []
        var reads: [ImportedRead] = []
        var lines: [Int] = []
        /// Positions of records a later line of the same id replaced: not written.
        var superseded = Set<Int>()
        /// The position of each id's latest record.
        var positionOfID: [String: Int] = [:]
        let kind: ImportKind

        init(kind: ImportKind) { self.kind = kind }

        mutating func append(_ record: Record, line: Int) {
            switch record {
            case .user(let user): users.append(user)
            case .article(let article): articles.append(article)
            case .read(let read): reads.append(read)
            }
            if let id = record.id { positionOfID[id] = lines.count }
            lines.append(line)
        }

        /// Drops the pending record of `id`, if one is pending.
        mutating func supersede(id: String) {
            if let position = positionOfID.removeValue(forKey: id) { superseded.insert(position) }
        }

        /// The records to write, and the line of each.
        var batch: (ImportBatch, lines: [Int]) {
            func kept<T>(_ records: [T]) -> [T] {
                superseded.isEmpty ? records : records.indices.filter { !superseded.contains($0) }.map { records[$0] }
            }
            let batch: ImportBatch =
                switch kind {
                case .users: .users(kept(users))
                case .articles: .articles(kept(articles))
                case .reads: .reads(kept(reads))
                }
            return (batch, kept(lines))
        }

        mutating func removeAll() {
            users.removeAll(keepingCapacity: true)
            articles.removeAll(keepingCapacity: true)
            reads.removeAll(keepingCapacity: true)
            lines.removeAll(keepingCapacity: true)
            superseded.removeAll()
            positionOfID.removeAll(keepingCapacity: true)
        }
    }

    /// Writes the pending records and counts their outcomes; rejected reads are reported with their
    /// lines (under `strict`, the first stops the import once the batch is written).
    private func write(_ pending: inout PendingBatch, _ path: String, _ summary: inout ImportFileSummary) async throws {
        let (batch, lines) = pending.batch
        pending.removeAll()
        guard !lines.isEmpty else { return }
        let result = try await sink.write(batch, at: now())
        summary.written += result.written
        summary.unchanged += result.unchanged
        var firstProblem: ImportError?
        for rejection in result.rejected {
            let reason: String
            switch (rejection.reason, batch) {
            case (.unknownUser, .reads(let reads)): reason = "unknown user \(ImportFieldRules.quote(reads[rejection.index].userID))"
            case (.unknownArticle, .reads(let reads)):
                reason = "unknown article \(ImportFieldRules.quote(reads[rejection.index].articleID))"
            default: reason = rejection.reason.rawValue
            }
            summary.skipped[rejection.reason.rawValue, default: 0] += 1
            let error = ImportError(file: path, line: lines[rejection.index], code: rejection.reason.skipReason, reason: reason)
            if strict { firstProblem = firstProblem ?? error } else { onProblem(error) }
        }
        if let firstProblem { throw firstProblem }
    }
}

extension ImportKind {
    /// What one record is called in a problem line.
    var noun: String {
        switch self {
        case .users: "user"
        case .articles: "article"
        case .reads: "read"
        }
    }
}

extension ImportBatchResult.Rejection.Reason {
    /// The reason the line of the record is skipped for.
    package var skipReason: ImportSkipReason {
        switch self {
        case .unknownUser: .unknownUser
        case .unknownArticle: .unknownArticle
        }
    }
}
