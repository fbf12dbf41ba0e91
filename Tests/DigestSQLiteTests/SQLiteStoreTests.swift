import DigestCore
@testable import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Testing
import DigestImport

@Suite struct SQLiteStoreTests {
    func message(_ key: String, user: String = "u1") -> OutboxMessage {
        OutboxMessage(
            dedupeKey: key, week: "2026-W46", userID: user, platform: .android, variant: .bigText,
            message: Array(#"{"message":{}}"#.utf8), report: #"{"rules":[]}"#, availableAt: 1_795_334_400)
    }

    @Test func commitsAreIdempotentAndMoveTheCursorWithTheMessages() async throws {
        let dir = try TemporaryDirectory()
        let database = SQLiteDatabase.sqlite(path: dir.path("store.sqlite"))
        let week = try ISOWeek(parsing: "2026-W46")
        try await database.withLedger { ledger async throws in
            #expect(try await ledger.begin(week: week, now: 100).cursor == 0)
            var counters = RunCounters()
            counters.users = 2
            counters.messages = 2
            #expect(try await ledger.commit(week: week, through: 7, messages: [message("k1"), message("k2")], counters: counters, now: 100) == 2)
            // The same batch again (a redone batch after a crash) adds nothing.
            #expect(try await ledger.commit(week: week, through: 7, messages: [message("k1"), message("k2")], counters: counters, now: 101) == 0)
        }
        let checkpoint = try await database.withLedger { try await $0.begin(week: week, now: 102) }
        #expect(checkpoint.cursor == 7)
        #expect(checkpoint.counters.enqueued == 2)
        #expect(checkpoint.counters.messages == 4)
        #expect(try await database.outboxStats(now: 0).byState == ["ready": 2])
    }

    /// A store the program creates has 16 KiB pages; one an older version made with 4 KiB pages (here
    /// converted back with the README's VACUUM) keeps them, migrates and takes a batch as before.
    @Test func newStoresGetSixteenKiBPagesAndOlderStoresKeepTheirs() async throws {
        let dir = try TemporaryDirectory()
        let fresh = SQLiteDatabase.sqlite(path: dir.path("fresh.sqlite"))
        _ = try await fresh.migrate()
        #expect(try fresh.connect().lines("PRAGMA page_size") == "16384")
        #expect(try fresh.connect().lines("PRAGMA journal_mode") == "wal")

        let oldPath = dir.path("old.sqlite")
        try SQLiteConnection(path: oldPath).execute(
            "PRAGMA journal_mode = DELETE; PRAGMA page_size = 4096; VACUUM; PRAGMA journal_mode = WAL")
        #expect(try SQLiteConnection(path: oldPath).lines("PRAGMA page_size") == "4096")
        let old = SQLiteDatabase.sqlite(path: oldPath)
        _ = try await old.migrate()
        let week = try ISOWeek(parsing: "2026-W46")
        let inserted = try await old.withLedger { ledger async throws in
            _ = try await ledger.begin(week: week, now: 100)
            return try await ledger.commit(week: week, through: 1, messages: [message("k1"), message("k2")], counters: RunCounters(), now: 100)
        }
        #expect(inserted == 2)
        #expect(try old.connect().lines("PRAGMA page_size") == "4096")
        #expect(try old.connect().lines("PRAGMA journal_mode") == "wal")
    }

    /// The sweeps of every lease (TTL, quiet hours) and the backlog a draining sender polls find
    /// their rows by the partial indexes or count them in the `(state, available_at)` index: none
    /// reads the ready rows that are not due yet, which is a week's outbox until Monday. Left to
    /// itself SQLite's planner took `(state, available_at)` for the sweeps and read every ready row
    /// at every lease (39 ms at 50,000 ready messages; seconds at a million).
    @Test func leaseSweepsAndTheBacklogReadNoRowNotDue() async throws {
        let dir = try TemporaryDirectory()
        let database = SQLiteDatabase.sqlite(path: dir.path("store.sqlite"))
        _ = try await database.migrate()
        let connection = try database.connect()
        func plan(_ sql: String) throws -> [String] {
            try connection.lines("EXPLAIN QUERY PLAN " + sql).split(separator: "\n").map { String($0.split(separator: "|").last ?? "") }
        }
        let expire = try plan(SQLiteOutboxQueries.SQL.expireTTL)
        #expect(expire.count == 1 && expire[0].contains("USING INDEX digest_outbox_expiry"), "\(expire)")
        let hold = try plan(SQLiteOutboxQueries.SQL.hold)
        #expect(hold.count == 1 && hold[0].contains("USING INDEX digest_outbox_window"), "\(hold)")
        let backlog = try plan(SQLiteOutboxQueries.SQL.backlog).filter { $0.contains("digest_outbox") }
        #expect(backlog.count == 6, "\(backlog)")
        for line in backlog {
            #expect(line.contains("USING COVERING INDEX digest_outbox_lease") || line.contains("USING INDEX digest_outbox_retrying"), "\(line)")
        }
    }

    /// The picks the ledger keeps come back as they were, whatever characters the ids hold (the
    /// reader splits the stored JSON itself, falling back to a full decoder for escapes).
    @Test func recentPicksComeBackAsWrittenWhateverTheIds() async throws {
        let dir = try TemporaryDirectory()
        let database = SQLiteDatabase.sqlite(path: dir.path("store.sqlite"))
        let weeks = try ["2026-W44", "2026-W45", "2026-W46"].map { try ISOWeek(parsing: $0) }
        let picks: [String: [[String]]] = [
            "u1": [["a1", "a2"], ["a3"], ["later"]],
            "u2": [[#"quote"d"#, #"back\slash"#, "tab\tin", "żółć 記事", "emoji 🇵🇱", " spaced "], [], []],
            "u3": [[], [], []],
        ]
        for (index, week) in weeks.enumerated() {
            var messages: [OutboxMessage] = []
            for user in picks.keys.sorted() {
                var outbox = message("\(user)-\(week)", user: user)
                outbox.week = week.description
                outbox.picks = picks[user]![index]
                messages.append(outbox)
            }
            _ = try await database.withLedger { ledger async throws in
                _ = try await ledger.begin(week: week, now: 100)
                return try await ledger.commit(week: week, through: 1, messages: messages, counters: RunCounters(), now: 100)
            }
        }
        let users = ["u1", "u2", "u3", "nobody"].enumerated().map { index, id in
            StoredReader(key: Int64(index + 1), reader: Reader(id: id, locale: "en", timeZone: "UTC", optedOut: false, devices: []))
        }
        let recent = try await database.withHistoryReader { try await $0.recentPicks(of: users, weeks: [weeks[1], weeks[0]]) }
        #expect(recent.map { Set($0) } == [["a1", "a2", "a3"], Set(picks["u2"]![0]), [], []])
    }

    @Test func aFailedBatchLeavesNeitherMessagesNorCursor() async throws {
        let dir = try TemporaryDirectory()
        let database = SQLiteDatabase.sqlite(path: dir.path("store.sqlite"))
        let week = try ISOWeek(parsing: "2026-W46")
        try await database.withLedger { ledger in
            _ = try await ledger.begin(week: week, now: 100)
            // Make the outbox insert fail on its CHECK constraint half-way through the batch.
            try await database.withConnection { connection in
                try connection.execute("CREATE TRIGGER fail_k2 BEFORE INSERT ON digest_outbox WHEN NEW.dedupe_key = 'k2' BEGIN SELECT RAISE(ABORT, 'injected'); END")
            }
            await #expect(throws: (any Error).self) {
                try await ledger.commit(week: week, through: 9, messages: [message("k1"), message("k2")], counters: RunCounters(), now: 100)
            }
        }
        #expect(try await database.outboxStats(now: 0).total == 0)
        #expect(try await database.withLedger { try await $0.begin(week: week, now: 100) }.cursor == 0)
    }

    /// The connections of this process to `path`: its file descriptors on the database file.
    static func connections(to path: String) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").filter { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) == path
        }.count
    }

    /// A store opens its writer and readers once; calls at once borrow them (and wait their turn) and
    /// open nothing more; closing closes them all, and a later call opens them again.
    @Test func callsBorrowTheConnectionsTheStoreOpenedOnce() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("store.sqlite")
        let database = SQLiteDatabase(path: path, readers: 3)
        #expect(try Self.connections(to: path) == 0)
        _ = try await database.migrate()
        #expect(try Self.connections(to: path) == 4)
        let week = try ISOWeek(parsing: "2026-W46")
        let most = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<20 {
                group.addTask {
                    switch index % 4 {
                    case 0: _ = try await database.outboxStats(now: 0)
                    case 1: _ = try await database.peek(limit: 5, state: nil)
                    case 2: _ = try await database.withHistoryReader { try await $0.users(idPrefix: "u", limit: 5) }
                    default:
                        _ = try await database.withLedger { ledger in
                            _ = try await ledger.begin(week: week, now: 100)
                            return try await ledger.commit(week: week, through: Int64(index), messages: [message("k\(index)")], counters: RunCounters(), now: 100)
                        }
                    }
                    return try Self.connections(to: path)
                }
            }
            return try await group.reduce(0) { max($0, $1) }
        }
        #expect(most == 4)
        #expect(try await database.outboxStats(now: 0).total == 5)
        await database.close()
        #expect(try Self.connections(to: path) == 0)
        #expect(try await database.outboxStats(now: 0).total == 5)
        #expect(try Self.connections(to: path) == 4)
    }

    /// With one reader connection, questions and readers opened inside a reader's scope (in its task)
    /// use the connection the scope holds instead of waiting for a second one.
    @Test(.timeLimit(.minutes(1))) func questionsInsideAReadersScopeUseItsConnection() async throws {
        let dir = try TemporaryDirectory()
        let database = SQLiteDatabase(path: dir.path("store.sqlite"), readers: 1)
        let week = try ISOWeek(parsing: "2026-W46")
        _ = try await database.withLedger { ledger in
            _ = try await ledger.begin(week: week, now: 100)
            return try await ledger.commit(week: week, through: 1, messages: [message("k1")], counters: RunCounters(), now: 100)
        }
        let (total, users) = try await database.withHistoryReader { outer in
            let users = try await database.withHistoryReader { try await $0.users(idPrefix: "u", limit: 5) }
            _ = try await outer.users(idPrefix: "u", limit: 5)
            return (try await database.outboxStats(now: 0).total, users.count)
        }
        #expect(total == 1 && users == 0)
    }

    /// A statement a call left stepped does not hold a reader's snapshot: the next call on that reader
    /// sees what was written since.
    @Test func aReaderSeesWhatWasWrittenAfterItsLastCall() async throws {
        let dir = try TemporaryDirectory()
        let database = SQLiteDatabase(path: dir.path("store.sqlite"), readers: 1)
        let week = try ISOWeek(parsing: "2026-W46")
        for round in 1...3 {
            _ = try await database.withLedger { ledger in
                _ = try await ledger.begin(week: week, now: 100)
                return try await ledger.commit(week: week, through: Int64(round), messages: [message("k\(round)")], counters: RunCounters(), now: 100)
            }
            // `due` is stepped once and left busy: without the reset on return, the counts by state of the
            // next call would run in the snapshot it holds and miss this round's message.
            let stats = try await database.outboxStats(now: 2_000_000_000)
            #expect(stats.total == round && stats.due == round)
        }
    }

    @Test func migrationsAreRecordedAndRepeatable() async throws {
        let dir = try TemporaryDirectory()
        let database = SQLiteDatabase.sqlite(path: dir.path("store.sqlite"))
        let first = try await database.migrate()
        #expect(first.from == 0 && first.to >= 1)
        let second = try await database.migrate()
        #expect(second.from == second.to)
    }

    @Test(arguments: [
        ("2026-11-17T19:22:05Z", Int64(1_794_943_325)),
        ("2026-11-17T19:22:05.123Z", Int64(1_794_943_325)),
        ("2026-11-17T20:22:05+01:00", Int64(1_794_943_325)),
        ("2026-11-17T14:22:05-05:00", Int64(1_794_943_325)),
        ("1970-01-01T00:00:00Z", Int64(0)),
    ])
    func timestampsParse(text: String, seconds: Int64) {
        #expect(Timestamp.parse(text) == seconds)
        #expect(Timestamp.parse(Timestamp.format(seconds)) == seconds)
    }

    @Test(arguments: ["2026-02-30T00:00:00Z", "2026-11-17 19:22", "2026-11-17T19:22:05", "yesterday", "2026-13-01T00:00:00Z", ""])
    func badTimestampsAreRejected(text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test func importingTwiceChangesNothing() async throws {
        let dir = try TemporaryDirectory()
        let database = SQLiteDatabase.sqlite(path: dir.path("store.sqlite"))
        let users = try dir.write("users.jsonl", lines: [
            #"{"id":"u1","locale":"pl-PL","timeZone":"Europe/Warsaw","devices":[{"token":"t1","platform":"ios"},{"token":"t2","platform":"web"}]}"#
        ])
        let fewer = try dir.write("users2.jsonl", lines: [
            #"{"id":"u1","locale":"pl-PL","timeZone":"Europe/Warsaw","devices":[{"token":"t2","platform":"web"}]}"#
        ])
        try await database.withImportSink { sink in
            let importer = HistoryImporter(sink: sink)
            #expect(try await importer.importFile(users, as: .users).written == 1)
            let again = try await importer.importFile(users, as: .users)
            #expect(again.written == 0 && again.unchanged == 1)
            // A changed device list is a change, and the dropped device is gone.
            #expect(try await importer.importFile(fewer, as: .users).written == 1)
        }
        let week = try ISOWeek(parsing: "2026-W46")
        let batch = try await database.withHistoryReader { try await $0.nextBatch(week: week, after: 0, limit: 10) }
        #expect(batch?.users.first?.reader.devices == [Device(token: "t2", platform: .web)])
    }

    @Test func anIdleReaderLetsTheWriterRestartTheWAL() async throws {
        let dir = try TemporaryDirectory()
        let database = SQLiteDatabase.sqlite(path: dir.path("store.sqlite"))
        let week = try ISOWeek(parsing: "2026-W46")
        try await database.withLedger { ledger in
            _ = try await ledger.begin(week: week, now: 100)
            // A reader that has run every kind of statement, then waits between batches.
            try await database.withHistoryReader { reader in
                _ = try await reader.nextBatch(week: week, after: 0, limit: 10)
                _ = try await reader.countUsers(week: week, after: 0)
                _ = try await reader.hasReads(from: 0, until: 1)
                _ = try await reader.articles(publishedFrom: 0, until: 1)
                _ = try await ledger.commit(week: week, through: 1, messages: [message("k1")], counters: RunCounters(), now: 100)
                // With a stale read transaction left open by the reader, this fails with "database is locked".
                try await ledger.maintain()
            }
        }
    }
}
