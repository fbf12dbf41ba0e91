package import DigestCore
import DigestPostgres
import DigestSQLite
package import DigestStore
import Foundation
package import Testing
package import DigestImport

/// The two implementations of the store; the conformance suites run every test on both.
package enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    package var testDescription: String { rawValue }
}

/// A new, empty, migrated store of one backend, with what a test needs to set it up and look inside.
package struct StoreHarness: Sendable {
    package let backend: Backend
    package let directory: TemporaryDirectory
    package let database: any DigestDatabase
    /// The PostgreSQL URL (nil on SQLite).
    package let url: String?
    /// The PostgreSQL store's run, for as long as the harness lives (nil on SQLite).
    private let running: RunningDatabase?

    package init(_ backend: Backend, chunkSize: Int = 1000) async throws {
        self.backend = backend
        directory = try TemporaryDirectory()
        switch backend {
        case .sqlite:
            let sqlite = SQLiteDatabase.sqlite(path: directory.path("store.sqlite"))
            _ = try await sqlite.migrate()
            database = sqlite
            url = nil
            running = nil
        case .postgres:
            let url = try PostgresCluster.shared().makeDatabase()
            var settings = PostgresRunCoordination.Settings()
            settings.chunkSize = chunkSize
            let postgres = try PostgresDatabase.postgres(url: url, run: settings)
            running = try RunningDatabase(postgres)
            _ = try await postgres.migrate()
            database = postgres
            self.url = url
        }
    }

    /// Runs `body` with an importer into this store.
    package func withImporter<T>(_ body: (HistoryImporter<AnySink>) async throws -> T) async throws -> T {
        try await Self.withImporter(database, body)
    }

    private static func withImporter<D: DigestDatabase, T>(_ database: D, _ body: (HistoryImporter<AnySink>) async throws -> T) async throws -> T {
        try await database.withImportSink { try await body(HistoryImporter(sink: AnySink($0))) }
    }

    /// Runs `body` with a reader of this store's history.
    package func withReader<T>(_ body: (any HistoryReader) async throws -> T) async throws -> T {
        try await Self.withReader(database, body)
    }

    private static func withReader<D: DigestDatabase, T>(_ database: D, _ body: (any HistoryReader) async throws -> T) async throws -> T {
        try await database.withHistoryReader { try await body($0) }
    }

    /// Runs `body` with this store's run ledger.
    package func withLedger<T>(_ body: (any RunLedger) async throws -> T) async throws -> T {
        try await Self.withLedger(database, body)
    }

    private static func withLedger<D: DigestDatabase, T>(_ database: D, _ body: (any RunLedger) async throws -> T) async throws -> T {
        try await database.withLedger { try await body($0) }
    }

    /// Runs `body` with a consumer of this store's outbox.
    package func withConsumer<T>(_ body: (any OutboxConsumer) async throws -> T) async throws -> T {
        try await Self.withConsumer(database, body)
    }

    package static func withConsumer<D: DigestDatabase, T>(_ database: D, _ body: (any OutboxConsumer) async throws -> T) async throws -> T {
        try await database.withOutboxConsumer { try await body($0) }
    }

    /// Users `u1…u<count>` (token `tok-<i>`, android), each with one message due at `availableAt(i)`,
    /// with the delivery window `window(i)` gives (end, quiet until, expiry; none by default).
    package func outbox(
        count: Int, availableAt: (Int) -> Int64 = { _ in 0 },
        window: (Int) -> (end: Int64, quietUntil: Int64, expiresAt: Int64)? = { _ in nil }
    ) async throws {
        let users = (1...count).map { i in
            Reader(id: "u\(i)", locale: "en", timeZone: "UTC", optedOut: false, devices: [Device(token: "tok-\(i)", platform: .android)])
        }
        _ = try await withImporter { try await $0.sink.write(.users(users)) }
        let week = try ISOWeek(parsing: "2026-W46")
        let messages = (1...count).map { i in
            OutboxMessage(
                dedupeKey: "2026-W46:u\(i):h\(i)", week: "2026-W46", userID: "u\(i)", platform: .android, variant: .defaultText,
                message: Array(#"{"message":{"token":"tok-\#(i)"}}"#.utf8), report: "{}", availableAt: availableAt(i),
                windowEnd: window(i)?.end, quietUntil: window(i)?.quietUntil, expiresAt: window(i)?.expiresAt)
        }
        try await withLedger { ledger in
            _ = try await ledger.begin(week: week, now: 0)
            _ = try await ledger.commit(week: week, through: 0, messages: messages, counters: RunCounters(), now: 0)
        }
    }

    /// Every outbox row's delivery bookkeeping, by id.
    package func rows() throws -> [Int64: OutboxDelivery] {
        var rows: [Int64: OutboxDelivery] = [:]
        switch backend {
        case .sqlite:
            let connection = try SQLiteDatabase.sqlite(path: directory.path("store.sqlite")).connect()
            let statement = try connection.statement(
                """
                SELECT id, state, attempts, available_at, lease_owner, leased_until, last_error, sent_at, fcm_name,
                       window_end, quiet_until, expires_at, settled_at FROM digest_outbox
                """)
            while try statement.step() {
                func optional(_ column: Int32) -> Int64? { statement.isNull(column) ? nil : statement.int64(column) }
                rows[statement.int64(0)] = OutboxDelivery(
                    state: OutboxDelivery.State(rawValue: statement.string(1))!, attempts: statement.int(2),
                    availableAt: statement.int64(3), leaseOwner: statement.optionalString(4),
                    leasedUntil: optional(5), lastError: statement.optionalString(6),
                    sentAt: optional(7), fcmName: statement.optionalString(8),
                    windowEnd: optional(9), quietUntil: optional(10), expiresAt: optional(11), settledAt: optional(12))
            }
        case .postgres:
            let null = "\u{1}"
            let output = try sql(
                """
                SELECT id, state, attempts, extract(epoch FROM available_at)::bigint, coalesce(lease_owner, '\(null)'),
                       coalesce(extract(epoch FROM leased_until)::bigint::text, '\(null)'), coalesce(last_error, '\(null)'),
                       coalesce(extract(epoch FROM sent_at)::bigint::text, '\(null)'), coalesce(fcm_name, '\(null)'),
                       coalesce(extract(epoch FROM window_end)::bigint::text, '\(null)'),
                       coalesce(extract(epoch FROM quiet_until)::bigint::text, '\(null)'),
                       coalesce(extract(epoch FROM expires_at)::bigint::text, '\(null)'),
                       coalesce(extract(epoch FROM settled_at)::bigint::text, '\(null)')
                FROM digest_outbox
                """)
            for line in output.split(separator: "\n") {
                let f = line.split(separator: "|", omittingEmptySubsequences: false).map { $0 == null ? nil : String($0) }
                rows[Int64(f[0]!)!] = OutboxDelivery(
                    state: OutboxDelivery.State(rawValue: f[1]!)!, attempts: Int(f[2]!)!, availableAt: Int64(f[3]!)!,
                    leaseOwner: f[4], leasedUntil: f[5].flatMap { Int64($0) }, lastError: f[6], sentAt: f[7].flatMap { Int64($0) },
                    fcmName: f[8], windowEnd: f[9].flatMap { Int64($0) }, quietUntil: f[10].flatMap { Int64($0) },
                    expiresAt: f[11].flatMap { Int64($0) }, settledAt: f[12].flatMap { Int64($0) })
            }
        }
        return rows
    }

    /// Runs SQL on the store (PostgreSQL through psql; SQLite through its connection) and returns
    /// rows as `a|b` lines.
    @discardableResult
    package func sql(_ statement: String) throws -> String {
        switch backend {
        case .sqlite:
            return try SQLiteDatabase.sqlite(path: directory.path("store.sqlite")).connect().lines(statement)
        case .postgres:
            return try PostgresCluster.shared().sql(statement, url: url!)
        }
    }
}

/// Either backend's import sink.
package struct AnySink: HistoryImportSink {
    package let base: any HistoryImportSink
    package init(_ base: any HistoryImportSink) { self.base = base }
    package func write(_ batch: ImportBatch) async throws -> ImportBatchResult { try await base.write(batch) }
    package func write(_ batch: ImportBatch, at now: Int64) async throws -> ImportBatchResult { try await base.write(batch, at: now) }
}

/// The importer's problem lines, collected from its `onProblem` callback.
package final class ImportProblemLog {
    package var lines: [String] = []
    package init() {}
}
