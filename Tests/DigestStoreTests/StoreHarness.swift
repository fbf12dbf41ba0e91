import DigestCore
import DigestStore
import DigestTesting
import Foundation
import Testing

/// The two implementations of the store; the conformance suites run every test on both.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }
}

/// A new, empty, migrated store of one backend, with what a test needs to set it up and look inside.
struct StoreHarness {
    let backend: Backend
    let directory: TemporaryDirectory
    let database: any DigestDatabase
    /// The PostgreSQL URL (nil on SQLite).
    let url: String?

    init(_ backend: Backend, chunkSize: Int = 1000) throws {
        self.backend = backend
        directory = try TemporaryDirectory()
        switch backend {
        case .sqlite:
            let sqlite = SQLiteDatabase.sqlite(path: directory.path("store.sqlite"))
            _ = try sqlite.migrate()
            database = sqlite
            url = nil
        case .postgres:
            let url = try PostgresCluster.shared().makeDatabase()
            var settings = PostgresRunCoordination.Settings()
            settings.chunkSize = chunkSize
            let postgres = try PostgresDatabase.postgres(url: url, run: settings)
            _ = try postgres.migrate()
            database = postgres
            self.url = url
        }
    }

    /// An importer into this store.
    func importer() throws -> HistoryImporter<AnySink> {
        switch database {
        case let sqlite as SQLiteDatabase: HistoryImporter(sink: AnySink(try SQLiteImportSink(database: sqlite)))
        case let postgres as PostgresDatabase: HistoryImporter(sink: AnySink(try PostgresImportSink(database: postgres)))
        default: fatalError("unknown backend")
        }
    }

    /// Users `u1…u<count>` (token `tok-<i>`, android), each with one message due at `availableAt(i)`.
    func outbox(count: Int, availableAt: (Int) -> Int64 = { _ in 0 }) throws {
        let sink = try importer().sink
        try sink.beginBatch()
        for i in 1...count {
            _ = try sink.upsert(
                user: Reader(id: "u\(i)", locale: "en", timeZone: "UTC", optedOut: false,
                             devices: [Device(token: "tok-\(i)", platform: .android)]))
        }
        try sink.commitBatch()
        let week = try ISOWeek(parsing: "2026-W46")
        let ledger = try database.makeLedger()
        _ = try ledger.begin(week: week, now: 0)
        let messages = (1...count).map { i in
            OutboxMessage(
                dedupeKey: "2026-W46:u\(i):h", week: "2026-W46", userID: "u\(i)", platform: .android, variant: .defaultText,
                message: Array(#"{"message":{"token":"tok-\#(i)"}}"#.utf8), report: "{}", availableAt: availableAt(i))
        }
        _ = try ledger.commit(week: week, through: 0, messages: messages, counters: RunCounters(), now: 0)
    }

    /// Every outbox row's delivery bookkeeping, by id.
    func rows() throws -> [Int64: OutboxDelivery] {
        var rows: [Int64: OutboxDelivery] = [:]
        switch backend {
        case .sqlite:
            let connection = try (database as! SQLiteDatabase).connect()
            let statement = try connection.statement(
                "SELECT id, state, attempts, available_at, lease_owner, leased_until, last_error, sent_at, fcm_name FROM digest_outbox")
            while try statement.step() {
                rows[statement.int64(0)] = OutboxDelivery(
                    state: OutboxDelivery.State(rawValue: statement.string(1))!, attempts: statement.int(2),
                    availableAt: statement.int64(3), leaseOwner: statement.optionalString(4),
                    leasedUntil: statement.isNull(5) ? nil : statement.int64(5), lastError: statement.optionalString(6),
                    sentAt: statement.isNull(7) ? nil : statement.int64(7), fcmName: statement.optionalString(8))
            }
        case .postgres:
            let null = "\u{1}"
            let output = try sql(
                """
                SELECT id, state, attempts, extract(epoch FROM available_at)::bigint, coalesce(lease_owner, '\(null)'),
                       coalesce(extract(epoch FROM leased_until)::bigint::text, '\(null)'), coalesce(last_error, '\(null)'),
                       coalesce(extract(epoch FROM sent_at)::bigint::text, '\(null)'), coalesce(fcm_name, '\(null)')
                FROM digest_outbox
                """)
            for line in output.split(separator: "\n") {
                let f = line.split(separator: "|", omittingEmptySubsequences: false).map { $0 == null ? nil : String($0) }
                rows[Int64(f[0]!)!] = OutboxDelivery(
                    state: OutboxDelivery.State(rawValue: f[1]!)!, attempts: Int(f[2]!)!, availableAt: Int64(f[3]!)!,
                    leaseOwner: f[4], leasedUntil: f[5].flatMap { Int64($0) }, lastError: f[6], sentAt: f[7].flatMap { Int64($0) },
                    fcmName: f[8])
            }
        }
        return rows
    }

    /// Runs SQL on the store (PostgreSQL through psql; SQLite through its connection) and returns
    /// rows as `a|b` lines.
    @discardableResult
    func sql(_ statement: String) throws -> String {
        switch backend {
        case .sqlite:
            let connection = try (database as! SQLiteDatabase).connect()
            let prepared = try connection.statement(statement)
            var lines: [String] = []
            while try prepared.step() {
                lines.append((0..<prepared.columnCount).map { prepared.isNull($0) ? "" : prepared.string($0) }.joined(separator: "|"))
            }
            return lines.joined(separator: "\n")
        case .postgres:
            return try PostgresCluster.shared().sql(statement, url: url!)
        }
    }
}

/// Either backend's import sink.
final class AnySink: HistoryImportSink {
    let base: any HistoryImportSink
    init(_ base: any HistoryImportSink) { self.base = base }
    func beginBatch() throws { try base.beginBatch() }
    func commitBatch() throws { try base.commitBatch() }
    func upsert(user: Reader) throws -> Bool { try base.upsert(user: user) }
    func upsert(article: Article) throws -> Bool { try base.upsert(article: article) }
    func insertRead(userID: String, articleID: String, readAt: Int64, seconds: Int) throws -> ReadInsertOutcome {
        try base.insertRead(userID: userID, articleID: articleID, readAt: readAt, seconds: seconds)
    }
    var writesReadsInBulk: Bool { base.writesReadsInBulk }
    func queueRead(_ read: QueuedRead) throws { try base.queueRead(read) }
    func flushReads() throws -> [(read: QueuedRead, outcome: ReadInsertOutcome)] { try base.flushReads() }
    func queueUser(_ user: Reader) throws { try base.queueUser(user) }
    func flushUsers() throws -> (written: Int, unchanged: Int) { try base.flushUsers() }
}
