import CSQLite
import DigestCore
@testable import DigestSQLite
import DigestStore
import DigestTesting
import DigestThreads
import Foundation
import Synchronization
import Testing

/// A reader's data on SQLite: the conformance suite every store runs, and what is SQLite's own
/// (every table with a reader column handled, no byte of a forgotten reader left in the files,
/// why every connection runs with `secure_delete` on, an export's memory, the checkpoint's wait).
@Suite struct SQLiteReaderDataTests {
    @Test(arguments: ReaderDataConformanceTests.Case.allCases)
    func conformance(_ testCase: ReaderDataConformanceTests.Case) async throws {
        try await ReaderDataConformanceTests.run(testCase, on: .sqlite)
    }

    /// Every table with a reader column (`user_id`, `user_pk`), `users` and the tables found through
    /// a reader's messages is one the forget removes rows from: a table added later with a reader
    /// column fails here until export and forget know it.
    @Test func everyTableWithAReaderColumnIsForgotten() async throws {
        let directory = try TemporaryDirectory()
        let connection = try SQLiteDatabase.sqlite(path: directory.path("store.sqlite")).connect()
        let withReaderColumn = try connection.lines(
            """
            SELECT DISTINCT m.name FROM sqlite_schema m, pragma_table_info(m.name) c
            WHERE m.type = 'table' AND c.name IN ('user_id', 'user_pk') ORDER BY m.name
            """
        ).split(separator: "\n").map(String.init)
        #expect(withReaderColumn == ["devices", "digest_outbox", "digest_picks", "digest_preference_changes", "digest_test_sends", "reads"])
        let required = Set(withReaderColumn + ["users", "digest_events", "digest_test_events"])
        #expect(required.subtracting(SQLiteDatabase.forgottenTables).isEmpty)
        // And every table named is one the schema has.
        let tables = Set(try connection.lines("SELECT name FROM sqlite_schema WHERE type = 'table'").split(separator: "\n").map(String.init))
        #expect(SQLiteDatabase.forgottenTables.subtracting(tables).isEmpty)
        // Run cursors are positions in `users.seq`, not readers: a forget leaves them.
        #expect(try connection.lines("SELECT name FROM pragma_table_info('digest_zone_runs') WHERE name = 'cursor'") == "cursor")
        #expect(try connection.lines("SELECT type FROM pragma_table_info('digest_runs') WHERE name = 'cursor'") == "INTEGER")
    }

    /// A forget's counts by SQLite's tables: the reader of the conformance suite's data, a reader
    /// with a departed token, and what neither touches (another reader's rows, report totals).
    @Test func forgetCountsEveryTableItRemovesFrom() async throws {
        let store = try await StoreHarness(.sqlite)
        let database = try #require(store.database as? SQLiteDatabase)
        try await ReaderDataConformanceTests.populate(store, ["gone", "stays"])
        // The APNs token of "gone" left a reader once: its hash goes too.
        let departed = OutboxMessage.tokenHash(ReaderDataConformanceTests.Tokens("gone").apns)
        try store.sql("INSERT INTO digest_departed_tokens (token_hash, left_at) VALUES ('\(departed)', 1), ('kept-hash', 1)")
        try store.sql("INSERT INTO digest_pruned_sent VALUES ('2026-W40', 'Default', 'android', 'pl', '', 7)")
        let before = try store.sql("SELECT * FROM digest_runs ORDER BY week") + store.sql("SELECT * FROM digest_zone_runs")
        let removed = [
            "users": 1, "devices": 3, "reads": 2, "digest_preference_changes": 3, "digest_outbox": 5, "digest_picks": 2, "digest_events": 3,
            "digest_test_sends": 1, "digest_test_events": 1, "digest_dead_tokens": 1, "digest_departed_tokens": 1,
        ]
        #expect(try await database.forgetReaders(["gone"], dryRun: true) == ForgetOutcome(readers: 1, removed: removed))
        #expect(try await database.forgetReaders(["gone"], dryRun: false) == ForgetOutcome(readers: 1, removed: removed))
        #expect(try store.sql("SELECT token_hash FROM digest_departed_tokens") == "kept-hash")
        #expect(try store.sql("SELECT sent FROM digest_pruned_sent") == "7")
        #expect(try store.sql("SELECT * FROM digest_runs ORDER BY week") + store.sql("SELECT * FROM digest_zone_runs") == before)
        #expect(try store.sql("SELECT count(*) FROM digest_outbox WHERE user_id = 'stays'") == "5")
    }

    /// What of a reader must be gone from the files after forget: their id, device tokens, Web Push
    /// endpoint and keys, message ids.
    static func needles(_ id: String) -> [String] {
        let tokens = ReaderDataConformanceTests.Tokens(id)
        let m = ReaderDataConformanceTests.messageIDs(id)
        return [id, tokens.fcm, tokens.apns, tokens.endpoint, tokens.p256dh, tokens.auth, m.sent, m.dead, m.leased, m.expired, m.ready,
            ReaderDataConformanceTests.testSendID(id)]
    }

    /// The needles found in the bytes of the store's files (the database, its `-wal` and `-shm`).
    static func found(_ needles: [String], in path: String) throws -> [String] {
        let files = try [path, path + "-wal", path + "-shm"].filter { FileManager.default.fileExists(atPath: $0) }.map {
            [UInt8](try Data(contentsOf: URL(fileURLWithPath: $0)))
        }
        return needles.filter { needle in
            let bytes = Array(needle.utf8)
            return files.contains { $0.firstRange(of: bytes) != nil }
        }
    }

    /// A reader's data written through the store's APIs (import, the run's ledger, a sender's lease
    /// and settlements, events, presses and preference changes, a test send), forgotten, the `-wal`
    /// truncated and the store closed: no byte of theirs is left in any of the files.
    @Test func noByteOfAForgottenReaderIsLeftInTheFiles() async throws {
        let store = try await StoreHarness(.sqlite)
        let path = store.directory.path("store.sqlite")
        let id = "forgotten-reader-7d1e"
        try await ReaderDataConformanceTests.populate(store, [id, "kept-reader"])
        // Lease the ready message too and settle it, and change the reader's preferences again:
        // updates that move rows, whose old copies the pages must not keep.
        let database = try #require(store.database as? SQLiteDatabase)
        _ = try await database.setPreferences(
            of: id, to: ReaderPreferences(every: 3, follow: ["a much longer list", "of topics", "than before"]), ifVersion: nil, source: .cli,
            messageID: nil, at: ReaderDataConformanceTests.t0 + 2_000)
        #expect(try Self.found(Self.needles(id), in: path) == Self.needles(id))

        let outcome = try await database.forgetReaders([id], dryRun: false)
        #expect(outcome.readers == 1)
        #expect(try await database.finishForgetting(wait: .seconds(60)) == ForgetResidue.none)
        #expect(SQLiteDatabase.walIsEmpty(path))
        // Before closing: the database file and the (empty) -wal and -shm hold none of it.
        #expect(try Self.found(Self.needles(id), in: path) == [])
        await database.close()
        #expect(try Self.found(Self.needles(id), in: path) == [])
        // The other reader is all there.
        #expect(try Self.found(Self.needles("kept-reader"), in: path) == Self.needles("kept-reader"))
        #expect(try database.connect().lines("PRAGMA integrity_check") == "ok")
    }

    /// Every connection the store opens runs with `secure_delete` on, whatever the library's default.
    @Test func everyConnectionRunsWithSecureDelete() async throws {
        let directory = try TemporaryDirectory()
        let database = SQLiteDatabase.sqlite(path: directory.path("store.sqlite"))
        #expect(try database.connect().lines("PRAGMA secure_delete") == "1")
        #expect(try await database.withConnection { try $0.lines("PRAGMA secure_delete") } == "1")
        #expect(try await database.read { try $0.lines("PRAGMA secure_delete") } == "1")
        #expect(try SQLiteConnection(path: directory.path("store.sqlite"), readOnly: true).lines("PRAGMA secure_delete") == "1")
        await database.close()
    }

    /// Why every connection, not only the forget's: a connection with `secure_delete` off that moves
    /// a row (an update that changes its size) leaves the old copy in the page's free space, where a
    /// later forget (which zeroes only what it deletes) does not reach. With it on, nothing is left.
    @Test(arguments: [false, true]) func anUpdateWithoutSecureDeleteLeavesTheOldRowInTheFile(secureDelete: Bool) async throws {
        let store = try await StoreHarness(.sqlite)
        let path = store.directory.path("store.sqlite")
        let database = try #require(store.database as? SQLiteDatabase)
        let id = "moved-row-reader-\(secureDelete)"
        try await ReaderDataConformanceTests.populate(store, [id, "kept-reader"])
        let other = try SQLiteConnection(path: path)
        try other.execute("PRAGMA secure_delete = \(secureDelete ? "ON" : "OFF")")
        try other.execute("UPDATE users SET locale = 'a-locale-long-enough-to-move-the-row' WHERE id = '\(id)'")
        _ = try await database.forgetReaders([id], dryRun: false)
        #expect(try await database.finishForgetting(wait: .seconds(60)) == ForgetResidue.none)
        await database.close()
        // The users row held the reader's id; its old copy stays where the update left it.
        #expect(try Self.found([id], in: path) == (secureDelete ? [] : [id]))
    }

    /// A reader with 150,000 reads exports in pieces of about 64 KiB (never the whole object at once),
    /// the store reading the reads a page at a time while the pieces go out: when it reads its last
    /// page of reads, most of them were written already (a store that read them all first, 15 MB as
    /// records, would have written none).
    @Test func anExportOf150000ReadsStreams() async throws {
        let directory = try TemporaryDirectory()
        let database = SQLiteDatabase.sqlite(path: directory.path("store.sqlite"))
        _ = try await database.withImportSink { sink in
            _ = try await sink.write(
                .articles([Article(id: "article-1", title: "A", url: "https://news.example/a", imageURL: nil, topics: [], publishedAt: 0, readingMinutes: 1)]))
            return try await sink.write(.users([Reader(id: "many", locale: "en", timeZone: "UTC", optedOut: false, devices: [])]))
        }
        try await database.withConnection { connection in
            try connection.execute(
                """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 150000)
                INSERT INTO reads (user_pk, read_at, article_pk, seconds)
                SELECT (SELECT pk FROM users WHERE id = 'many'), 1700000000 + i * 60, (SELECT pk FROM articles), i % 300 FROM n;
                """)
        }
        // Each run of the reads' statement on a reader connection notes the bytes written by then.
        let progress = ExportProgress()
        let context = UInt(bitPattern: Unmanaged.passUnretained(progress).toOpaque())
        for thread in try await database.opened().readers.resources {
            try await thread.run { reader in
                _ = sqlite3_trace_v2(
                    reader.connection.handle, UInt32(SQLITE_TRACE_STMT),
                    { _, context, _, sql in
                        guard let context, let sql, String(cString: sql.assumingMemoryBound(to: CChar.self)).contains("FROM reads r JOIN articles") else { return 0 }
                        Unmanaged<ExportProgress>.fromOpaque(context).takeUnretainedValue().readsPage()
                        return 0
                    }, UnsafeMutableRawPointer(bitPattern: context))
            }
        }
        var tail: [UInt8] = []
        let export = ReaderExport { piece in
            progress.wrote(piece.count)
            tail = Array(piece.suffix(200))
        }
        #expect(try await database.exportReader("many", into: export))
        let (pages, written, largest, atLastPage) = progress.figures
        #expect(written > 7_000_000)
        #expect(pages == 150_000 / SQLiteDatabase.exportBatch + 1)
        // Pieces of 64 KiB and an element; most of them out before the last page was read.
        #expect(largest < 1 << 17)
        #expect(atLastPage > written * 9 / 10, "\(atLastPage) of \(written) bytes written when the last page of reads was read")
        let text = String(decoding: tail, as: UTF8.self)
        #expect(text.hasSuffix("}\n") && text.contains(#""read_at":"\#(Timestamp.format(1_700_000_000 + 150_000 * 60))""#))
        await database.close()
    }

    /// The store reads a reader's reads by pages of its key, oldest first, none twice.
    @Test func readsArePagedByTheirKey() async throws {
        let directory = try TemporaryDirectory()
        let connection = try SQLiteDatabase.sqlite(path: directory.path("store.sqlite")).connect()
        try connection.execute(
            """
            INSERT INTO users (id, locale, time_zone) VALUES ('r', 'en', 'UTC');
            INSERT INTO articles (id, title, url, topics, published_at, reading_minutes) VALUES ('a', 't', 'u', '[]', 0, 1), ('b', 't', 'u', '[]', 0, 1);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
            INSERT INTO reads SELECT 1, 1000 + i / 2, 1 + i % 2, i FROM n;
            """)
        let queries = SQLiteReaderDataQueries(connection: connection)
        var pages: [Int] = []
        var seconds: [Int] = []
        var after: SQLiteReaderDataQueries.ReadCursor?
        repeat {
            let (reads, last) = try queries.reads(key: 1, after: after, limit: 1_000)
            pages.append(reads.count)
            seconds += reads.map(\.seconds)
            after = last
        } while after != nil
        #expect(pages == [1_000, 1_000, 500])
        #expect(seconds == Array(1...2500))
    }

    /// The checkpoint waits for another connection's read transaction, up to the wait, and says the
    /// `-wal` is not empty; once the reader ends, it empties it.
    @Test func theCheckpointWaitsForReadersAndSaysWhenItCannot() async throws {
        let store = try await StoreHarness(.sqlite)
        let path = store.directory.path("store.sqlite")
        let database = try #require(store.database as? SQLiteDatabase)
        try await ReaderDataConformanceTests.populate(store, ["reader-1", "reader-2"])
        let other = try SQLiteConnection(path: path)
        try other.execute("BEGIN")
        #expect(try other.lines("SELECT count(*) FROM users") == "2")
        _ = try await database.forgetReaders(["reader-1"], dryRun: false)
        let clock = ContinuousClock()
        let start = clock.now
        let residue = try await database.finishForgetting(wait: .milliseconds(1_500))
        let waited = clock.now - start
        guard case .walNotTruncated(let busyFor) = residue else {
            Issue.record("the checkpoint passed a reader: \(residue)")
            return
        }
        #expect(busyFor >= .milliseconds(1_500) && waited < .seconds(5))
        #expect(!SQLiteDatabase.walIsEmpty(path))
        try other.execute("COMMIT")
        #expect(try await database.finishForgetting(wait: .seconds(60)) == ForgetResidue.none)
        #expect(SQLiteDatabase.walIsEmpty(path))
    }
}

/// What an export wrote by the time its store read each page of reads.
final class ExportProgress: Sendable {
    private let state = Mutex((pages: 0, written: 0, largest: 0, atLastPage: 0))

    func readsPage() { state.withLock { $0.pages += 1; $0.atLastPage = $0.written } }
    func wrote(_ count: Int) { state.withLock { $0.written += count; $0.largest = max($0.largest, count) } }
    var figures: (pages: Int, written: Int, largest: Int, atLastPage: Int) { state.withLock { $0 } }
}
