import DigestCore
package import DigestStore
import PostgresNIO

/// A reader's data on PostgreSQL (`digest readers export` and `forget`, docs/008): exported from one
/// snapshot, the long lists through cursors; forgotten a batch of readers a transaction, from every
/// table digest owns, with what only the operator can see to named in the advice.
extension PostgresDatabase: ReaderDataStore, ReaderDataTables {
    package static var forgottenTables: Set<String> {
        Set(PostgresReaderData.byReader.map(\.table)).union([
            "digest_outbox", "digest_events", "digest_test_sends", "digest_test_events", "digest_dead_tokens",
        ])
    }

    /// In one `REPEATABLE READ` read-only transaction, so every section reads the same snapshot; on
    /// a pool that never runs it again after a lost connection (the first attempt's bytes are out).
    package func exportReader(_ id: String, into export: ReaderExport) async throws -> Bool {
        // The export is written by this body alone, which the caller awaits: one task at a time.
        nonisolated(unsafe) let export = export
        return try await withPool(reconnectWindow: .zero) { pool in
            try await pool.transaction { connection in
                try await connection.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                return try await PostgresReaderData.export(id, into: export, on: connection)
            }
        }
    }

    /// One transaction for the batch, tried again every 250 ms while a live worker holds a chunk that
    /// may hold one of the readers (``PostgresReaderData/forget(_:on:)``); a dry run rolls it back.
    package func forgetReaders(_ ids: [String], dryRun: Bool) async throws -> ForgetOutcome {
        var seen = Set<String>()
        let ids = ids.filter { seen.insert($0).inserted }
        guard !ids.isEmpty else { return ForgetOutcome() }
        return try await withPool { pool in
            while true {
                if let outcome = try await pool.transaction(commit: !dryRun, { try await PostgresReaderData.forget(ids, on: $0) }) {
                    return outcome
                }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }

    /// Nothing to make go: PostgreSQL reclaims space on its own schedule, so the advice names what
    /// stays (and `wait` has nothing to wait for).
    package func finishForgetting(wait: Duration) async throws -> ForgetResidue {
        let publishers = try await withPool { pool in
            try await pool.rows(PostgresQuery(unsafeSQL: PostgresReaderData.publishersViewsSQL)).map { try $0.decode(String.self) }
        }
        var advice = [
            "The forgotten rows stay in the tables' files as dead tuples until VACUUM reclaims them: autovacuum will, or run now "
                + "`VACUUM \(Self.forgottenTables.union(["digest_run_chunks"]).sorted().joined(separator: ", "))`.",
            "WAL segments (and a replica's or an archive's copies) and base backups hold the rows until their retention passes (docs/005).",
        ]
        if !publishers.isEmpty {
            advice.append(
                "\(publishers.joined(separator: ", ")) \(publishers.count == 1 ? "is" : "are") the publisher's own "
                    + "\(publishers.count == 1 ? "view" : "views"): digest removed what it owns; delete the readers' rows from the tables under "
                    + "\(publishers.count == 1 ? "it" : "them") in the publisher's system.")
        }
        return .advice(advice)
    }
}

/// The statements of ``PostgresDatabase``'s ``ReaderDataStore`` conformance.
enum PostgresReaderData {
    /// Rows a cursor hands over at a time: a long list costs the client one batch of memory.
    static let batch = 5_000

    /// The tables whose rows name the reader in one column, removed by it (the users' table last:
    /// the rows referring to it go first, so each table's count is its own).
    static let byReader: [(table: String, column: String)] = [
        ("digest_import_reads", "user_id"), ("digest_import_devices", "user_id"), ("digest_import_reader_preferences", "id"),
        ("digest_preference_changes", "user_id"), ("digest_picks", "user_id"), ("digest_import_users", "id"),
    ]

    /// Which of the views a reader's history is read through are the publisher's own (their
    /// definitions do not read digest's table behind them, as the migrations tell).
    static let publishersViewsSQL = """
        SELECT v.name FROM (VALUES ('digest_users', 'digest_import_users'), ('digest_devices', 'digest_import_devices'),
                                   ('digest_reads', 'digest_import_reads'),
                                   ('digest_reader_preferences', 'digest_import_reader_preferences')) AS v(name, own)
        WHERE to_regclass(v.name) IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM pg_views WHERE viewname = v.name AND schemaname = current_schema()
                          AND definition LIKE '%' || v.own || '%')
        ORDER BY v.name
        """

    // MARK: Export

    static func export(_ id: String, into export: ReaderExport, on connection: PostgresConnection) async throws -> Bool {
        let reader = try await connection.rows(
            PostgresQuery(
                unsafeSQL: "SELECT id::text, locale::text, time_zone::text FROM digest_users WHERE id COLLATE \"C\" = $1::text LIMIT 1",
                binds: PostgresPreferences.binds(id)))
        guard let row = reader.first, let preferences = try await PostgresPreferences.read(id, on: connection) else { return false }
        let (readerID, locale, zone) = try row.decode((String, String, String).self)
        try export.value(.reader, ExportedData.Reader(id: readerID, locale: locale, zone: zone))
        // Digest's own view has a row or the defaults for everyone; a publisher's without one: null.
        let ownViews = try await PostgresPreferences.viewsAreDigests(connection)
        let stored: ExportedData.Preferences? = preferences.hasRow || ownViews ? ExportedData.Preferences(preferences.stored) : nil
        try export.value(.preferences, stored)

        try await export.array(.preference_changes) {
            try await stream(
                """
                SELECT extract(epoch FROM at)::int8, source, message_id, before::text, after::text, action
                FROM digest_preference_changes WHERE user_id = $1 ORDER BY at, id
                """, id, on: connection
            ) { row in
                let (at, source, messageID, before, after, action) = try row.decode((Int64, String, String?, String, String, String?).self)
                guard let source = PreferenceSource(rawValue: source) else { return }
                let change = PreferenceChange(
                    at: at, source: source, messageID: messageID, before: ReaderPreferences(json: before) ?? ReaderPreferences(),
                    after: ReaderPreferences(json: after) ?? ReaderPreferences())
                try export.element(ExportedData.PreferenceChangeRecord(change, action: action))
            }
        }

        let columns = try await deviceColumns(connection)
        try await export.array(.devices) {
            try await stream(
                """
                SELECT d.token::text, d.platform::text, coalesce(\(columns.provider), 'fcm'), \(columns.topic), \(columns.keys),
                       extract(epoch FROM \(columns.registered))::int8, \(columns.listPosition),
                       extract(epoch FROM x.died_at)::int8, x.reason
                FROM digest_devices d LEFT JOIN digest_dead_tokens x ON x.token = d.token
                WHERE d.user_id COLLATE "C" = $1::text ORDER BY \(columns.listPosition) NULLS LAST, d.token COLLATE "C"
                """, id, on: connection
            ) { row in
                let (token, platform, provider, topic, p256dh, auth, registered, position, diedAt, reason) =
                    try row.decode((String, String, String, String?, String?, String?, Int64?, Int?, Int64?, String?).self)
                var keys: ExportedData.Device.Keys?
                if let p256dh, let auth { keys = .init(p256dh: p256dh, auth: auth) }
                var dead: ExportedData.Device.Dead?
                if let diedAt, let reason { dead = .init(diedAt: Timestamp.format(diedAt), reason: reason) }
                try export.element(
                    ExportedData.Device(
                        token: token, platform: platform, provider: provider, topic: topic, keys: keys,
                        registeredAt: registered.map(Timestamp.format), listPosition: position, dead: dead))
            }
        }

        try await export.array(.reads) {
            try await stream(
                """
                SELECT article_id::text, extract(epoch FROM read_at)::int8, seconds::int8 FROM digest_reads
                WHERE user_id COLLATE "C" = $1::text ORDER BY read_at, article_id COLLATE "C"
                """, id, on: connection
            ) { row in
                let (article, readAt, seconds) = try row.decode((String, Int64, Int).self)
                try export.element(ExportedData.Read(articleID: article, readAt: Timestamp.format(readAt), seconds: seconds))
            }
        }

        try await export.array(.messages) {
            try await stream(
                """
                SELECT message_id, week, platform, provider, variant, state, target, message::text, headers::text, report::text, locale,
                       timing, due_local, attempts, last_error, extract(epoch FROM created_at)::int8,
                       extract(epoch FROM available_at)::int8, extract(epoch FROM sent_at)::int8, extract(epoch FROM settled_at)::int8
                FROM digest_outbox WHERE user_id = $1 ORDER BY id
                """, id, on: connection
            ) { row in
                let (messageID, week, platform, provider, variant, state, target, message, headers, report, locale, timing, dueLocal,
                     attempts, lastError, created, available, sent, settled) =
                    try row.decode(
                        (String?, String, String, String, String, String, String, String, String?, String, String?, String?, String?, Int,
                         String?, Int64, Int64, Int64?, Int64?).self)
                try export.element(
                    ExportedData.Message(
                        messageID: messageID, week: week, platform: platform, provider: provider, variant: variant, state: state,
                        target: target, message: JSONText(message), headers: headers.map(JSONText.init), report: JSONText(report),
                        locale: locale, timing: timing, dueLocal: dueLocal, attempts: attempts, lastError: lastError,
                        createdAt: Timestamp.format(created), availableAt: Timestamp.format(available), sentAt: sent.map(Timestamp.format),
                        settledAt: settled.map(Timestamp.format)))
            }
        }

        try await export.array(.picks) {
            try await stream("SELECT week, picks FROM digest_picks WHERE user_id = $1 ORDER BY week", id, on: connection) { row in
                let (week, picks) = try row.decode((String, [String]).self)
                try export.element(ExportedData.Picks(week: week, articleIDs: picks))
            }
        }

        // The reader's messages' events, found by each message's week and id (the events' key).
        try await export.array(.events) {
            try await stream(
                """
                SELECT e.message_id, e.type, e.action, extract(epoch FROM e.at)::int8, extract(epoch FROM e.received_at)::int8
                FROM digest_outbox o JOIN digest_events e ON e.week = o.week AND e.message_id = o.message_id
                WHERE o.user_id = $1 ORDER BY o.id, e.at, e.type, e.action
                """, id, on: connection
            ) { row in
                try export.element(try event(row))
            }
        }

        // A send's events come on its rows (one a send without any), gathered as the rows pass.
        try await export.array(.test_sends) {
            var pending: ExportedData.TestSend?
            try await stream(
                """
                SELECT s.message_id, extract(epoch FROM s.sent_at)::int8, s.device, s.week, s.provider, s.platform, s.variant,
                       e.type, e.action, extract(epoch FROM e.at)::int8, extract(epoch FROM e.received_at)::int8
                FROM digest_test_sends s LEFT JOIN digest_test_events e ON e.message_id = s.message_id
                WHERE s.user_id = $1 ORDER BY s.sent_at, s.message_id, e.at, e.type, e.action
                """, id, on: connection
            ) { row in
                let (messageID, sentAt, device, week, provider, platform, variant, type, action, at, received) =
                    try row.decode((String, Int64, String, String, String, String, String, String?, String?, Int64?, Int64?).self)
                if pending?.messageID != messageID {
                    if let pending { try export.element(pending) }
                    pending = ExportedData.TestSend(
                        messageID: messageID, sentAt: Timestamp.format(sentAt), device: device, week: week, provider: provider,
                        platform: platform, variant: variant, events: [])
                }
                if let type, let at, let received {
                    pending?.events.append(
                        ExportedData.Event(
                            messageID: messageID, type: type, action: action == "" ? nil : action, at: Timestamp.format(at),
                            receivedAt: Timestamp.format(received)))
                }
            }
            if let pending { try export.element(pending) }
        }
        try export.finish()
        return true
    }

    static func event(_ row: PostgresRow) throws -> ExportedData.Event {
        let (messageID, type, action, at, received) = try row.decode((String, String, String, Int64, Int64).self)
        return ExportedData.Event(
            messageID: messageID, type: type, action: action.isEmpty ? nil : action, at: Timestamp.format(at),
            receivedAt: Timestamp.format(received))
    }

    /// Runs `sql` (binding `id` as `$1`) as a cursor of the transaction and hands its rows to `body`
    /// a ``batch`` at a time, so a reader's 150,000 reads never sit in memory at once.
    static func stream(
        _ sql: String, _ id: String, on connection: PostgresConnection, _ body: (PostgresRow) throws -> Void
    ) async throws {
        try await connection.run(
            PostgresQuery(unsafeSQL: "DECLARE digest_export NO SCROLL CURSOR FOR \(sql)", binds: PostgresPreferences.binds(id)))
        while true {
            let rows = try await connection.rows(PostgresQuery(unsafeSQL: "FETCH \(batch) FROM digest_export"))
            for row in rows { try body(row) }
            if rows.count < batch { break }
        }
        try await connection.run("CLOSE digest_export")
    }

    /// The optional columns of `digest_devices d` (an adopter's view may lack those the contract
    /// gained later), each NULL of its type where the view has none, as the history reader reads them.
    static func deviceColumns(_ connection: PostgresConnection) async throws -> (
        registered: String, listPosition: String, provider: String, topic: String, keys: String
    ) {
        let names = Set(
            try await connection.rows(
                "SELECT attname::text FROM pg_attribute WHERE attrelid = to_regclass('digest_devices') AND attnum > 0 AND NOT attisdropped"
            ).map { try $0.decode(String.self) })
        return (
            names.contains("registered_at") ? "d.registered_at" : "NULL::timestamptz",
            names.contains("list_position") ? "d.list_position::int8" : "NULL::int8",
            names.contains("provider") ? "d.provider::text" : "NULL::text",
            names.contains("topic") ? "d.topic::text" : "NULL::text",
            names.contains("keys_p256dh") && names.contains("keys_auth") ? "d.keys_p256dh::text, d.keys_auth::text" : "NULL::text, NULL::text"
        )
    }

    // MARK: Forget

    /// Removes every row of `ids` digest owns, in the caller's transaction, and rewrites the run
    /// chunks' boundaries that name them; `nil`, having changed nothing, while a worker holds a chunk
    /// that may hold one of them (it read them, and will write their messages: the caller tries
    /// again once it is done, and removes those too).
    ///
    /// The run's chunks are locked against every other writer first, for the whole transaction: no
    /// worker claims a chunk (and reads its readers) or commits one, and no week is split, until the
    /// readers are gone; a split or a commit already under way ends first, and what it wrote is then
    /// found here. The outbox goes before the dead tokens: its `DELETE` waits for a sender settling a
    /// leased row, whose dead-token entry (written with the settlement) the later statement then sees.
    static func forget(_ ids: [String], on connection: PostgresConnection) async throws -> ForgetOutcome? {
        let binds = PostgresPreferences.binds(ids)
        try await connection.run("LOCK TABLE digest_run_chunks IN SHARE ROW EXCLUSIVE MODE")
        guard try await connection.rows(PostgresQuery(unsafeSQL: holdingChunkSQL, binds: binds)).isEmpty else { return nil }
        // As every writer of preferences does first: a preferences write waits, and then finds no reader.
        try await PostgresPreferences.lockUsers(ids, on: connection)
        var held = Set(
            try await connection.rows(
                PostgresQuery(unsafeSQL: "SELECT id::text FROM digest_users WHERE id COLLATE \"C\" = ANY($1::text[])", binds: binds)
            ).map { try $0.decode(String.self) })
        var removed: [String: Int] = [:]
        func count(_ table: String, _ rows: [PostgresRow]) throws {
            for row in rows {
                let (user, count) = try row.decode((String, Int).self)
                held.insert(user)
                removed[table, default: 0] += count
            }
        }

        // Their tokens, in the publisher's view too: the dead-token entries about them are digest's.
        var tokens = Set(
            try await connection.rows(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT token::text FROM digest_devices WHERE user_id COLLATE "C" = ANY($1::text[])
                        UNION SELECT token FROM digest_import_devices WHERE user_id = ANY($1::text[])
                        """, binds: binds)
            ).map { try $0.decode(String.self) })

        var messageWeeks: [String] = [], messageIDs: [String] = []
        for row in try await connection.rows(
            PostgresQuery(
                unsafeSQL: """
                    WITH gone AS (DELETE FROM digest_outbox WHERE user_id = ANY($1::text[]) RETURNING user_id, week, message_id, target)
                    SELECT user_id, count(*)::int8, array_agg(week) FILTER (WHERE message_id IS NOT NULL),
                           array_agg(message_id) FILTER (WHERE message_id IS NOT NULL), array_agg(DISTINCT target) FILTER (WHERE target <> '')
                    FROM gone GROUP BY user_id
                    """, binds: binds))
        {
            let (user, count, weeks, messages, targets) = try row.decode((String, Int, [String]?, [String]?, [String]?).self)
            held.insert(user)
            removed["digest_outbox", default: 0] += count
            messageWeeks += weeks ?? []
            messageIDs += messages ?? []
            tokens.formUnion(targets ?? [])
        }
        if !messageIDs.isEmpty {
            removed["digest_events"] = try await connection.rows(
                """
                WITH gone AS (DELETE FROM digest_events e USING unnest(\(messageWeeks)::text[], \(messageIDs)::text[]) AS m(week, id)
                              WHERE e.week = m.week AND e.message_id = m.id RETURNING 1)
                SELECT count(*)::int8 FROM gone
                """
            ).first?.decode(Int.self)
        }

        var testSends: [String] = []
        for row in try await connection.rows(
            PostgresQuery(unsafeSQL: "DELETE FROM digest_test_sends WHERE user_id = ANY($1::text[]) RETURNING user_id, message_id", binds: binds))
        {
            let (user, messageID) = try row.decode((String, String).self)
            held.insert(user)
            testSends.append(messageID)
        }
        if !testSends.isEmpty {
            removed["digest_test_sends"] = testSends.count
            removed["digest_test_events"] = try await connection.rows(
                """
                WITH gone AS (DELETE FROM digest_test_events WHERE message_id = ANY(\(testSends)::text[]) RETURNING 1)
                SELECT count(*)::int8 FROM gone
                """
            ).first?.decode(Int.self)
        }

        for (table, column) in byReader {
            try count(
                table,
                try await connection.rows(
                    PostgresQuery(
                        unsafeSQL: """
                            WITH gone AS (DELETE FROM \(table) WHERE \(column) = ANY($1::text[]) RETURNING \(column))
                            SELECT \(column)::text, count(*)::int8 FROM gone GROUP BY 1
                            """, binds: binds)))
        }

        // A token another reader's device still holds keeps its entry: it is about that device too.
        if !tokens.isEmpty {
            var tokenBinds = binds
            tokenBinds.append(Array(tokens))
            removed["digest_dead_tokens"] = try await connection.rows(
                PostgresQuery(
                    unsafeSQL: """
                        WITH gone AS (
                            DELETE FROM digest_dead_tokens x WHERE x.token = ANY($2::text[])
                              AND NOT EXISTS (SELECT 1 FROM digest_devices d WHERE d.token = x.token AND d.user_id COLLATE "C" <> ALL($1::text[]))
                            RETURNING 1)
                        SELECT count(*)::int8 FROM gone
                        """, binds: tokenBinds)
            ).first?.decode(Int.self)
        }

        try await rewriteChunkBoundaries(binds, on: connection)
        removed = removed.filter { $0.value > 0 }
        return ForgetOutcome(readers: held.count, unknown: ids.filter { !held.contains($0) }, removed: removed)
    }

    /// A chunk a live worker holds that may hold one of the readers `$1`: a `--week` chunk whose id
    /// range has one, or a rolling run's chunk of one's zone (its `seq` range is not looked into).
    static let holdingChunkSQL = """
        SELECT 1 FROM digest_run_chunks c
        WHERE c.state = 'claimed' AND c.leased_until > now()
          AND CASE WHEN c.time_zone IS NULL
                   THEN EXISTS (SELECT 1 FROM unnest($1::text[]) AS x(id)
                                WHERE (c.after_user IS NULL OR x.id COLLATE "C" > c.after_user)
                                  AND (c.through_user IS NULL OR x.id COLLATE "C" <= c.through_user))
                   ELSE c.time_zone IN (SELECT u.time_zone::text FROM digest_users u WHERE u.id COLLATE "C" = ANY($1::text[])) END
        LIMIT 1
        """

    /// A `--week` run's chunk `k` holds the readers in `(after_user, through_user]` in byte order, and
    /// its `through_user` is chunk `k+1`'s `after_user` (NULL: an open end). A boundary that is a
    /// forgotten reader `x` becomes the greatest id below `x` of a reader who stays (`''`, below every
    /// id, when none does), in both chunks alike: no staying reader is between it and `x`, so every
    /// chunk holds the staying readers it held (a worker that claims one later reads the same ones).
    /// The caller holds the table locked, so no split made meanwhile escapes the rewrite.
    static func rewriteChunkBoundaries(_ binds: PostgresBindings, on connection: PostgresConnection) async throws {
        func below(_ boundary: String) -> String {
            """
            coalesce((SELECT max(u.id COLLATE "C") FROM digest_users u
                      WHERE u.id COLLATE "C" < \(boundary) AND u.id COLLATE "C" <> ALL($1::text[])), '')
            """
        }
        try await connection.run(
            PostgresQuery(
                unsafeSQL: """
                    UPDATE digest_run_chunks c
                    SET after_user = CASE WHEN c.after_user = ANY($1::text[]) THEN \(below("c.after_user")) ELSE c.after_user END,
                        through_user = CASE WHEN c.through_user = ANY($1::text[]) THEN \(below("c.through_user")) ELSE c.through_user END
                    WHERE c.after_user = ANY($1::text[]) OR c.through_user = ANY($1::text[])
                    """, binds: binds))
    }
}
