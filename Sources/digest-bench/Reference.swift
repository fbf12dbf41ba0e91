import DigestDemo
import DigestCore
import ArgumentParser
import DigestSQLite
import DigestStore
import Foundation

/// `digest-bench reference`: the physical floor of a weekly run. Inserts as many rows, of the same
/// byte sizes, as another database's outbox holds into an identical, empty `digest_outbox` (the
/// project's schema: unique `dedupe_key`, the `(state, available_at)` index), with one prepared
/// statement in transactions of `--rows-per-transaction` rows, on a connection with the project's
/// settings (WAL, `synchronous = NORMAL`). Only the inserts, the commits and the closing checkpoint
/// are timed; reading the other outbox and making the payloads are not.
struct Reference: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Time inserting another outbox's rows (same count, same byte sizes) into a fresh outbox.")

    @Option(help: "The SQLite file to create for the reference (replaced if it exists).")
    var db: String

    @Option(help: "The database whose digest_outbox gives the rows' count and sizes (read, not timed).")
    var like: String

    @Option(help: "Rows per transaction (a run commits about 1000 users, ~2000 messages, per transaction).")
    var rowsPerTransaction: Int = 2000

    /// One outbox row: the short columns as they were, the long ones by size only.
    struct Row {
        var dedupeKey: String
        var week: String
        var userID: String
        var platform: String
        var variant: String
        var messageBytes: Int
        var reportBytes: Int
        var availableAt: Int64
    }

    func validate() throws {
        guard rowsPerTransaction > 0 else { throw ValidationError("--rows-per-transaction must be positive") }
        guard FileManager.default.fileExists(atPath: like) else { throw ValidationError("no such file: \(like)") }
    }

    func run() throws {
        // Not timed: the rows of the other outbox, in id order, long columns by size only.
        let reading = Stopwatch()
        var rows: [Row] = []
        var messageBytes = 0
        var reportBytes = 0
        do {
            let source = try SQLiteConnection(path: like, readOnly: true)
            // The run's rows: its week is the latest (the generator's earlier digests are older weeks).
            let count = try source.statement(
                "SELECT count(*) FROM digest_outbox WHERE week = (SELECT max(week) FROM digest_outbox)")
            if try count.step() { rows.reserveCapacity(count.int(0)) }
            count.reset()
            let select = try source.statement(
                """
                SELECT dedupe_key, week, user_id, platform, variant, length(CAST(message AS BLOB)),
                    length(CAST(report AS BLOB)), available_at
                FROM digest_outbox WHERE week = (SELECT max(week) FROM digest_outbox) ORDER BY id
                """)
            while try select.step() {
                let row = Row(
                    dedupeKey: select.string(0), week: select.string(1), userID: select.string(2),
                    platform: select.string(3), variant: select.string(4), messageBytes: select.int(5),
                    reportBytes: select.int(6), availableAt: select.int64(7))
                messageBytes += row.messageBytes
                reportBytes += row.reportBytes
                rows.append(row)
            }
            select.reset()
        }
        // Not timed: one payload per size, bound the way the ledger binds them (message as UTF-8
        // bytes, report as a native String).
        let pool = Self.pool(bytes: max(rows.map(\.messageBytes).max() ?? 0, rows.map(\.reportBytes).max() ?? 0))
        var messages = [[UInt8]](repeating: [], count: (rows.map(\.messageBytes).max() ?? 0) + 1)
        var reports = [String](repeating: "", count: (rows.map(\.reportBytes).max() ?? 0) + 1)
        for row in rows {
            if messages[row.messageBytes].count != row.messageBytes { messages[row.messageBytes] = Array(pool[0..<row.messageBytes]) }
            if reports[row.reportBytes].utf8.count != row.reportBytes {
                reports[row.reportBytes] = String(decoding: pool[0..<row.reportBytes], as: UTF8.self)
            }
        }
        let readSeconds = reading.seconds

        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: db + suffix) }
        var connection: SQLiteConnection? = try SQLiteDatabase(path: db).connect()
        // connect() leaves its schema-version query stepped but not reset (an open read transaction);
        // the reference is the physical floor, so reset it, as asking for the cached statement does.
        _ = try connection!.statement("SELECT max(version) FROM digest_schema")
        let now = Int64(Date().timeIntervalSince1970)

        // Timed: prepared inserts in transactions, then closing the connection (its checkpoint), as
        // a run's process does when it ends.
        let clock = Stopwatch()
        try Self.insert(rows, into: connection!, messages: messages, reports: reports, now: now, perTransaction: rowsPerTransaction)
        let insertSeconds = clock.seconds
        connection = nil
        _ = connection
        let seconds = clock.seconds

        let rate = seconds > 0 ? Double(rows.count) / seconds : 0
        print(
            """
            {"rows": \(rows.count), "seconds": \(String(format: "%.3f", seconds)), \
            "insertSeconds": \(String(format: "%.3f", insertSeconds)), "rowsPerSecond": \(String(format: "%.0f", rate)), \
            "messageBytes": \(messageBytes), "reportBytes": \(reportBytes), "rowsPerTransaction": \(rowsPerTransaction), \
            "untimedPrepareSeconds": \(String(format: "%.3f", readSeconds))}
            """)
    }

    /// The timed part; the statement is released before the caller closes the connection.
    static func insert(
        _ rows: [Row], into connection: SQLiteConnection, messages: [[UInt8]], reports: [String], now: Int64,
        perTransaction: Int
    ) throws {
        let insert = try connection.statement(
            """
            INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        var start = 0
        while start < rows.count {
            let end = min(start + perTransaction, rows.count)
            try connection.execute("BEGIN IMMEDIATE")
            for row in rows[start..<end] {
                insert.reset()
                insert.bind(row.dedupeKey, at: 1)
                insert.bind(row.week, at: 2)
                insert.bind(row.userID, at: 3)
                insert.bind(row.platform, at: 4)
                insert.bind(row.variant, at: 5)
                insert.bindText(messages[row.messageBytes], at: 6)
                insert.bind(reports[row.reportBytes], at: 7)
                insert.bind(row.availableAt, at: 8)
                insert.bind(now, at: 9)
                try insert.run()
            }
            try connection.execute("COMMIT")
            start = end
        }
    }

    /// JSON-safe ASCII filler (SQLite stores text as is, so only the sizes matter).
    static func pool(bytes: Int) -> [UInt8] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 ,:{}".utf8)
        var random = BenchRandom(seed: 7)
        return (0..<bytes).map { _ in alphabet[random.below(alphabet.count)] }
    }
}
