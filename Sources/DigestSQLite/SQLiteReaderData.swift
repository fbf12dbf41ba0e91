import CSQLite
import DigestCore
package import DigestStore
import DigestThreads
import Foundation

/// A reader's data on SQLite (docs/008): exported from one read transaction on a reader connection,
/// the long lists a batch per job; forgotten a batch of readers per write transaction on the writer,
/// whose connection (as every connection of the store, ``SQLiteConnection``) runs with
/// `secure_delete` on; the `-wal` emptied at the end.
extension SQLiteDatabase: ReaderDataStore, ReaderDataTables {
    package static let forgottenTables: Set<String> = [
        "users", "devices", "reads", "digest_preference_changes", "digest_outbox", "digest_picks", "digest_events",
        "digest_test_sends", "digest_test_events", "digest_dead_tokens", "digest_departed_tokens",
    ]

    package func exportReader(_ id: String, into export: ReaderExport) async throws -> Bool {
        try await opened().withSnapshot { thread in
            func run<T: Sendable>(_ body: @escaping @Sendable (SQLiteReaderDataQueries) throws -> T) async throws -> T {
                try await thread.run { try body(SQLiteReaderDataQueries(connection: $0.connection)) }
            }
            guard let head = try await run({ try $0.head(id) }) else { return false }
            try export.value(.reader, head.reader)
            try export.value(.preferences, ExportedData.Preferences(head.preferences))
            try await export.array(.preference_changes) {
                var after: SQLiteReaderDataQueries.ChangeCursor?
                repeat {
                    let start = after
                    let (changes, last) = try await run { try $0.changes(key: head.key, after: start, limit: Self.exportBatch) }
                    for change in changes { try export.element(change) }
                    after = last
                } while after != nil
            }
            let devices = try await run { try $0.devices(key: head.key) }
            try await export.array(.devices) { for device in devices { try export.element(device) } }
            try await export.array(.reads) {
                var after: SQLiteReaderDataQueries.ReadCursor?
                repeat {
                    let start = after
                    let (reads, last) = try await run { try $0.reads(key: head.key, after: start, limit: Self.exportBatch) }
                    for read in reads { try export.element(read) }
                    after = last
                } while after != nil
            }
            let weeks = try await run { try $0.outboxWeeks() }
            try await export.array(.messages) {
                var next: Int? = 0
                while let start = next {
                    let (messages, following) = try await run { try $0.messages(of: id, weeks: weeks, from: start, atLeast: Self.messageBatch) }
                    for message in messages { try export.element(message) }
                    next = following
                }
            }
            let picks = try await run { try $0.picks(of: id) }
            try await export.array(.picks) { for pick in picks { try export.element(pick) } }
            try await export.array(.events) {
                var next: Int? = 0
                while let start = next {
                    let (events, following) = try await run { try $0.events(of: id, weeks: weeks, from: start, atLeast: Self.exportBatch) }
                    for event in events { try export.element(event) }
                    next = following
                }
            }
            let testSends = try await run { try $0.testSends(of: id) }
            try await export.array(.test_sends) { for send in testSends { try export.element(send) } }
            try export.finish()
            return true
        }
    }

    /// Rows read a job for the reads, changes and events (small records): a few hundred KB at most.
    static let exportBatch = 2_000
    /// Outbox rows read a job at least (a week's rows of the reader come together): 1–2 KB each.
    static let messageBatch = 200

    package func forgetReaders(_ ids: [String], dryRun: Bool) async throws -> ForgetOutcome {
        try await withConnection { connection in
            try connection.execute("BEGIN IMMEDIATE")
            do {
                let outcome = try SQLiteReaderDataQueries(connection: connection).forget(ids)
                // A dry run removes what the real one would, and rolls it back: the counts are the same.
                try connection.execute(dryRun ? "ROLLBACK" : "COMMIT")
                return outcome
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// A `TRUNCATE` checkpoint on the writer, tried again until it empties the `-wal` or `wait` has
    /// passed: each try waits for other processes' readers (whose read transactions keep the frames
    /// the checkpoint would drop) up to what is left of `wait`, at most the usual busy timeout.
    package func finishForgetting(wait: Duration) async throws -> ForgetResidue {
        let clock = ContinuousClock()
        let start = clock.now
        while true {
            let left = min(wait - (clock.now - start), .milliseconds(SQLiteConnection.busyTimeout))
            let milliseconds = Int32(max(1, (left / .milliseconds(1)).rounded(.up)))
            let path = path
            let truncated = try await withConnection { connection in
                try connection.truncateWAL(busyTimeout: milliseconds) && Self.walIsEmpty(path)
            }
            if truncated { return .none }
            let waited = clock.now - start
            if waited >= wait { return .walNotTruncated(busyFor: waited) }
            try await Task.sleep(for: min(.milliseconds(100), wait - waited))
        }
    }

    /// The `-wal` is absent or holds no byte.
    static func walIsEmpty(_ path: String) -> Bool {
        guard let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? NSNumber else { return true }
        return size.intValue == 0
    }
}

extension SQLitePool {
    /// Runs `body` with a reader connection of its own inside one read transaction, so that every
    /// job `body` runs on it reads the same snapshot; the transaction ends when `body` returns.
    func withSnapshot<T>(isolation: isolated (any Actor)? = #isolation, _ body: (DedicatedThread<SQLiteReader>) async throws -> T) async throws -> T {
        try await readers.withResource { thread in
            try await thread.run { try $0.connection.execute("BEGIN") }
            // Ended even when the task was cancelled (a read transaction left open holds back checkpoints).
            return try await withCleanup { try await body(thread) } cleanup: { try? await thread.run { $0.connection.endLeftovers() } }
        }
    }
}

extension SQLiteConnection {
    /// A `TRUNCATE` checkpoint, waiting up to `busyTimeout` ms for other connections' readers and
    /// writers (the busy timeout is set back afterwards); `true` when it copied every frame and
    /// truncated the `-wal`.
    func truncateWAL(busyTimeout: Int32) throws(SQLiteError) -> Bool {
        resetStatements()
        sqlite3_busy_timeout(handle, busyTimeout)
        defer { sqlite3_busy_timeout(handle, Self.busyTimeout) }
        var frames: Int32 = 0
        var copied: Int32 = 0
        let code = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_TRUNCATE, &frames, &copied)
        if code & 0xFF == SQLITE_BUSY { return false }
        guard code == SQLITE_OK else { throw error(code, sql: "wal_checkpoint(TRUNCATE)") }
        return frames == 0
    }
}

/// The statements of export and forget, on one connection: synchronous, on its thread.
struct SQLiteReaderDataQueries {
    let connection: SQLiteConnection

    /// Where a page of preference changes ended: `(at, id)`.
    typealias ChangeCursor = (at: Int64, id: Int64)
    /// Where a page of reads ended: the key of `reads` after the reader's.
    typealias ReadCursor = (readAt: Int64, article: Int64)

    struct Head: Sendable {
        let key: Int64
        let reader: ExportedData.Reader
        let preferences: StoredPreferences
    }

    /// The reader's row: its key, id, locale, zone and preferences.
    func head(_ id: String) throws -> Head? {
        let statement = try connection.statement(
            "SELECT pk, locale, time_zone, opted_out, pref_version, \(SQLitePreferences.columns) FROM users WHERE id = ?")
        statement.bind(id, at: 1)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        let preferences = SQLitePreferences.decode(statement, at: 5, off: statement.int(3) != 0)
        return Head(
            key: statement.int64(0), reader: ExportedData.Reader(id: id, locale: statement.string(1), zone: statement.string(2)),
            preferences: StoredPreferences(preferences: preferences, version: statement.int(4)))
    }

    /// The reader's preference changes after `cursor`, oldest first (by the index on `(user_pk, at, id)`).
    func changes(key: Int64, after cursor: ChangeCursor?, limit: Int) throws -> ([ExportedData.PreferenceChangeRecord], ChangeCursor?) {
        let statement = try connection.statement(
            """
            SELECT at, id, source, message_id, before, after, action FROM digest_preference_changes
            WHERE user_pk = ?1 AND (at, id) > (?2, ?3) ORDER BY at, id LIMIT ?4
            """)
        statement.bind(key, at: 1)
        statement.bind(cursor?.at ?? .min, at: 2)
        statement.bind(cursor?.id ?? .min, at: 3)
        statement.bind(limit, at: 4)
        var records: [ExportedData.PreferenceChangeRecord] = []
        var last: ChangeCursor?
        while try statement.step() {
            guard let source = PreferenceSource(rawValue: statement.string(2)),
                let before = ReaderPreferences(json: statement.string(4)), let after = ReaderPreferences(json: statement.string(5))
            else {
                throw SQLiteError(code: 1, message: "digest_preference_changes: a row that does not read back", path: connection.path)
            }
            let change = PreferenceChange(at: statement.int64(0), source: source, messageID: statement.optionalString(3), before: before, after: after)
            records.append(ExportedData.PreferenceChangeRecord(change, action: statement.optionalString(6)))
            last = (statement.int64(0), statement.int64(1))
        }
        return (records, records.count == limit ? last : nil)
    }

    /// The reader's devices in list order (undated ones last, by token), each with its dead-token entry.
    func devices(key: Int64) throws -> [ExportedData.Device] {
        let statement = try connection.statement(
            """
            SELECT d.token, d.platform, d.provider, d.topic, d.keys_p256dh, d.keys_auth, d.registered_at, d.list_position,
                t.died_at, t.reason
            FROM devices d LEFT JOIN digest_dead_tokens t ON t.token = d.token
            WHERE d.user_pk = ? ORDER BY d.list_position IS NULL, d.list_position, d.token
            """)
        statement.bind(key, at: 1)
        var devices: [ExportedData.Device] = []
        while try statement.step() {
            let keys = statement.optionalString(4).flatMap { p256dh in
                statement.optionalString(5).map { ExportedData.Device.Keys(p256dh: p256dh, auth: $0) }
            }
            devices.append(
                ExportedData.Device(
                    token: statement.string(0), platform: statement.string(1), provider: statement.string(2), topic: statement.optionalString(3),
                    keys: keys, registeredAt: statement.isNull(6) ? nil : Timestamp.format(statement.int64(6)),
                    listPosition: statement.isNull(7) ? nil : statement.int(7),
                    dead: statement.isNull(8) ? nil : ExportedData.Device.Dead(diedAt: Timestamp.format(statement.int64(8)), reason: statement.string(9))))
        }
        return devices
    }

    /// The reader's reads after `cursor`, oldest first, by the key of `reads`.
    func reads(key: Int64, after cursor: ReadCursor?, limit: Int) throws -> ([ExportedData.Read], ReadCursor?) {
        let statement = try connection.statement(
            """
            SELECT a.id, r.read_at, r.seconds, r.article_pk FROM reads r JOIN articles a ON a.pk = r.article_pk
            WHERE r.user_pk = ?1 AND (r.read_at, r.article_pk) > (?2, ?3) ORDER BY r.read_at, r.article_pk LIMIT ?4
            """)
        statement.bind(key, at: 1)
        statement.bind(cursor?.readAt ?? .min, at: 2)
        statement.bind(cursor?.article ?? .min, at: 3)
        statement.bind(limit, at: 4)
        var reads: [ExportedData.Read] = []
        reads.reserveCapacity(limit)
        var last: ReadCursor?
        while try statement.step() {
            reads.append(ExportedData.Read(articleID: statement.string(0), readAt: Timestamp.format(statement.int64(1)), seconds: statement.int(2)))
            last = (statement.int64(1), statement.int64(3))
        }
        return (reads, reads.count == limit ? last : nil)
    }

    /// The outbox's weeks, oldest first: each dedupe key starts with `<week>:`, so its unique index
    /// gives them one probe a week (the outbox has no index on `user_id`, and a scan of it a reader
    /// would cost a forget of many readers a pass over every message each).
    func outboxWeeks() throws -> [String] {
        let statement = try connection.statement(
            "SELECT substr(dedupe_key, 1, instr(dedupe_key, ':') - 1) FROM digest_outbox WHERE dedupe_key >= ? ORDER BY dedupe_key LIMIT 1")
        var weeks: [String] = []
        var from = ""
        while true {
            statement.bind(from, at: 1)
            guard try statement.step() else { break }
            let week = statement.string(0)
            statement.reset()
            guard !week.isEmpty else { break }
            weeks.append(week)
            // `;` follows `:`: the first key of a later week.
            from = week + ";"
        }
        return weeks
    }

    /// The statement finding a reader's rows of a week by the dedupe key's range (`<week>:<id>:`),
    /// `columns` selected, in id order.
    private func weekRows(_ columns: String, of id: String, week: String) throws -> SQLiteStatement {
        let statement = try connection.statement(
            """
            SELECT \(columns) FROM digest_outbox
            WHERE dedupe_key >= ?1 AND dedupe_key < ?1 || char(1114111) AND week = ?2 AND user_id = ?3 ORDER BY id
            """)
        statement.bind("\(week):\(id):", at: 1)
        statement.bind(week, at: 2)
        statement.bind(id, at: 3)
        return statement
    }

    /// The reader's messages of `weeks[start...]`, a week at a time until at least `atLeast`; with the
    /// index of the next week to read, `nil` after the last.
    func messages(of id: String, weeks: [String], from start: Int, atLeast: Int) throws -> ([ExportedData.Message], Int?) {
        var messages: [ExportedData.Message] = []
        var index = start
        while index < weeks.count, messages.count < atLeast {
            let statement = try weekRows(
                """
                message_id, week, platform, provider, variant, state, target, message, headers, report, locale, timing, due_local, attempts,
                last_error, created_at, available_at, sent_at, settled_at
                """, of: id, week: weeks[index])
            while try statement.step() {
                func time(_ column: Int32) -> String? { statement.isNull(column) ? nil : Timestamp.format(statement.int64(column)) }
                messages.append(
                    ExportedData.Message(
                        messageID: statement.optionalString(0), week: statement.string(1), platform: statement.string(2),
                        provider: statement.string(3), variant: statement.string(4), state: statement.string(5), target: statement.string(6),
                        message: JSONText(statement.string(7)), headers: statement.optionalString(8).map(JSONText.init),
                        report: JSONText(statement.string(9)), locale: statement.optionalString(10), timing: statement.optionalString(11),
                        dueLocal: statement.optionalString(12), attempts: statement.int(13), lastError: statement.optionalString(14),
                        createdAt: Timestamp.format(statement.int64(15)), availableAt: Timestamp.format(statement.int64(16)),
                        sentAt: time(17), settledAt: time(18)))
            }
            index += 1
        }
        return (messages, index < weeks.count ? index : nil)
    }

    /// The events of the reader's messages of `weeks[start...]` (by their message ids, in the
    /// messages' order; a message's in the order they happened), a week at a time until at least `atLeast`; with the next week's index.
    func events(of id: String, weeks: [String], from start: Int, atLeast: Int) throws -> ([ExportedData.Event], Int?) {
        var events: [ExportedData.Event] = []
        var index = start
        let find = try connection.statement(
            "SELECT message_id, type, action, at, received_at FROM digest_events WHERE week = ? AND message_id = ? ORDER BY at, type, action")
        while index < weeks.count, events.count < atLeast {
            var ids: [String] = []
            let statement = try weekRows("message_id", of: id, week: weeks[index])
            while try statement.step() {
                if !statement.isNull(0) { ids.append(statement.string(0)) }
            }
            for messageID in ids {
                find.reset()
                find.bind(weeks[index], at: 1)
                find.bind(messageID, at: 2)
                while try find.step() { events.append(Self.event(find)) }
            }
            index += 1
        }
        return (events, index < weeks.count ? index : nil)
    }

    /// An event of a row `message_id, type, action, at, received_at`.
    static func event(_ row: SQLiteStatement) -> ExportedData.Event {
        let action = row.string(2)
        return ExportedData.Event(
            messageID: row.string(0), type: row.string(1), action: action.isEmpty ? nil : action, at: Timestamp.format(row.int64(3)),
            receivedAt: Timestamp.format(row.int64(4)))
    }

    /// The reader's picks, by week.
    func picks(of id: String) throws -> [ExportedData.Picks] {
        let statement = try connection.statement("SELECT week, picks FROM digest_picks WHERE user_id = ? ORDER BY week")
        statement.bind(id, at: 1)
        var picks: [ExportedData.Picks] = []
        while try statement.step() {
            picks.append(ExportedData.Picks(week: statement.string(0), articleIDs: SQLiteHistoryQueries.decodeStringArray(statement.string(1))))
        }
        return picks
    }

    /// The reader's test sends, oldest first, each with its events. The table has no index on
    /// `user_id`: it holds editors' sends, a few a week.
    func testSends(of id: String) throws -> [ExportedData.TestSend] {
        let statement = try connection.statement(
            "SELECT message_id, sent_at, device, week, provider, platform, variant FROM digest_test_sends WHERE user_id = ? ORDER BY sent_at, message_id")
        statement.bind(id, at: 1)
        var sends: [ExportedData.TestSend] = []
        while try statement.step() {
            sends.append(
                ExportedData.TestSend(
                    messageID: statement.string(0), sentAt: Timestamp.format(statement.int64(1)), device: statement.string(2),
                    week: statement.string(3), provider: statement.string(4), platform: statement.string(5), variant: statement.string(6),
                    events: []))
        }
        let events = try connection.statement(
            "SELECT message_id, type, action, at, received_at FROM digest_test_events WHERE message_id = ? ORDER BY at, type, action")
        for index in sends.indices {
            events.reset()
            events.bind(sends[index].messageID, at: 1)
            while try events.step() { sends[index].events.append(Self.event(events)) }
        }
        return sends
    }

    /// Deletes every row about `ids` inside the caller's transaction, counting them by table: the
    /// readers' test sends and their events, then for each reader the events of their messages, their
    /// outbox rows in every state, picks, reads, preference changes, devices and `users` row, the dead-token
    /// entries of their devices' tokens and of their messages' targets (unless another reader's device
    /// holds the token: the entry is that device's) and the departed-token hashes of those tokens.
    /// Rows found by id are deleted for an id without a `users` row too (listed unknown). Sent messages
    /// are not added to `digest_pruned_sent`: their events go with them, and a week's figures are
    /// counted without the reader throughout.
    func forget(_ ids: [String]) throws -> ForgetOutcome {
        var outcome = ForgetOutcome()
        func delete(_ table: String, _ statement: SQLiteStatement) throws {
            try statement.run()
            if connection.changes > 0 { outcome.removed[table, default: 0] += connection.changes }
        }
        // Test sends have no index on `user_id` (editors' sends, a few a week): one pass for the batch.
        let batch = String(decoding: try JSONEncoder().encode(ids), as: UTF8.self)
        let testEvents = try connection.statement(
            """
            DELETE FROM digest_test_events
            WHERE message_id IN (SELECT message_id FROM digest_test_sends WHERE user_id IN (SELECT value FROM json_each(?)))
            """)
        testEvents.bind(batch, at: 1)
        try delete("digest_test_events", testEvents)
        let testSends = try connection.statement("DELETE FROM digest_test_sends WHERE user_id IN (SELECT value FROM json_each(?))")
        testSends.bind(batch, at: 1)
        try delete("digest_test_sends", testSends)
        let weeks = try outboxWeeks()
        var seen = Set<String>()
        for id in ids where seen.insert(id).inserted {
            let user = try connection.statement("SELECT pk FROM users WHERE id = ?")
            user.bind(id, at: 1)
            let key: Int64? = try user.step() ? user.int64(0) : nil
            user.reset()
            if key == nil { outcome.unknown.append(id) } else { outcome.readers += 1 }
            var tokens = Set<String>()
            if let key {
                let devices = try connection.statement("SELECT token FROM devices WHERE user_pk = ?")
                devices.bind(key, at: 1)
                while try devices.step() { tokens.insert(devices.string(0)) }
            }
            var messages: [(id: Int64, week: String, messageID: String?)] = []
            for week in weeks {
                let rows = try weekRows("id, message_id, target", of: id, week: week)
                while try rows.step() {
                    messages.append((rows.int64(0), week, rows.optionalString(1)))
                    if !rows.string(2).isEmpty { tokens.insert(rows.string(2)) }
                }
            }
            let events = try connection.statement("DELETE FROM digest_events WHERE week = ? AND message_id = ?")
            let outbox = try connection.statement("DELETE FROM digest_outbox WHERE id = ?")
            for message in messages {
                if let messageID = message.messageID {
                    events.reset()
                    events.bind(message.week, at: 1)
                    events.bind(messageID, at: 2)
                    try delete("digest_events", events)
                }
                outbox.reset()
                outbox.bind(message.id, at: 1)
                try delete("digest_outbox", outbox)
            }
            let picks = try connection.statement("DELETE FROM digest_picks WHERE user_id = ?")
            picks.bind(id, at: 1)
            try delete("digest_picks", picks)
            if let key {
                for table in ["reads", "digest_preference_changes", "devices"] {
                    let statement = try connection.statement("DELETE FROM \(table) WHERE user_pk = ?")
                    statement.bind(key, at: 1)
                    try delete(table, statement)
                }
                let statement = try connection.statement("DELETE FROM users WHERE pk = ?")
                statement.bind(key, at: 1)
                try delete("users", statement)
            }
            let dead = try connection.statement(
                "DELETE FROM digest_dead_tokens WHERE token = ?1 AND NOT EXISTS (SELECT 1 FROM devices WHERE token = ?1)")
            let departed = try connection.statement("DELETE FROM digest_departed_tokens WHERE token_hash = ?")
            for token in tokens.sorted() {
                dead.reset()
                dead.bind(token, at: 1)
                try delete("digest_dead_tokens", dead)
                departed.reset()
                departed.bind(OutboxMessage.tokenHash(token), at: 1)
                try delete("digest_departed_tokens", departed)
            }
        }
        return outcome
    }
}
