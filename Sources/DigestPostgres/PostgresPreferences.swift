public import DigestCore
public import DigestStore
import PostgresNIO

/// Readers' preferences on PostgreSQL (docs/005, "Reader preferences"): the run reads them from the
/// view `digest_reader_preferences` joined to `digest_users` (`off` is `opted_out`); digest writes
/// them to its own table `digest_import_reader_preferences`, with their version, and every change to
/// `digest_preference_changes`, only while both views are digest's own.
enum PostgresPreferences {
    /// The preferences' columns a users query selects after `id, locale, time_zone, opted_out`, from
    /// `digest_reader_preferences p` (NULL for a reader without a row: ``preferences(off:_:)``).
    static let columns = """
        p.every::int8, p.from_week::text, (p.paused_until::date - DATE '1970-01-01')::int8, array_to_string(p.follow::text[], E'\\n'), array_to_string(p.mute::text[], E'\\n'), p.fewer::text
        """

    /// What a users query of `digest_users u` joins for ``columns``: each reader's row of the view
    /// found by its key, one probe a reader (`LATERAL … LIMIT 1`: a plain join of a large batch may be
    /// planned as a hash join over the whole view, and a view with two rows for a reader gives one).
    static let join = """
        LEFT JOIN LATERAL (SELECT x.every, x.from_week, x.paused_until, x.follow, x.mute, \(fewer) AS fewer
                           FROM digest_reader_preferences x WHERE x.id COLLATE "C" = u.id COLLATE "C" LIMIT 1) p ON true
        """

    /// ``join`` for a chunk of consecutive ids: the view's rows in the same range (`range`, on `p.id`,
    /// with the users' binds), merged with the users' in one pass of each index rather than probed
    /// one by one, and never the whole view.
    static func join(range: String) -> String {
        """
        LEFT JOIN (SELECT x.id, x.every, x.from_week, x.paused_until, x.follow, x.mute, \(fewer) AS fewer
                   FROM digest_reader_preferences x) p ON p.id COLLATE "C" = u.id COLLATE "C" AND \(range)
        """
    }

    /// The view row `x`'s "fewer" topics (digest's view has them; a publisher's view without the
    /// column reads as none): a line each, `topic<TAB>until` in Unix seconds.
    static let fewer = "(to_jsonb(x) ->> 'fewer')"

    /// The columns ``columns`` reads, in order.
    /// (The topics come as one text each, on lines of their own: one value to decode, not an array's.)
    typealias Row = (every: Int?, from: String?, pausedDays: Int?, follow: String?, mute: String?, fewer: String?)

    /// A reader's preferences from their ``columns`` and `opted_out`: the defaults for a reader
    /// without a row (no work beyond the check); a value outside the contract (a pace other than 1,
    /// 2 or 4, a week that does not parse, NULL) reads as its default.
    static func preferences(off: Bool, _ row: Row) -> ReaderPreferences {
        guard row.every != nil || row.from != nil || row.pausedDays != nil || row.follow != nil || row.mute != nil || row.fewer != nil
        else {
            return ReaderPreferences(off: off)
        }
        var preferences = ReaderPreferences(off: off)
        if let every = row.every, ReaderPreferences.allowedEvery.contains(every) { preferences.every = every }
        if let from = row.from { preferences.from = week(from) }
        if let days = row.pausedDays { preferences.pausedUntil = CivilDate(daysSinceEpoch: days) }
        preferences.follow = topics(row.follow)
        preferences.mute = topics(row.mute)
        if let fewer = row.fewer { preferences.fewer = fewerTopics(fewer) }
        return preferences
    }

    /// "Fewer" topics as `fewer` holds them: a line each, the topic and its end (Unix seconds)
    /// separated by a tab; `nil` for none. A line that does not read is skipped.
    static func fewerText(_ fewer: [FewerTopic]) -> String? {
        fewer.isEmpty ? nil : fewer.map { "\($0.topic)\t\($0.until)" }.joined(separator: "\n")
    }

    static func fewerTopics(_ text: String) -> [FewerTopic] {
        text.split(separator: "\n").compactMap { line in
            guard let tab = line.lastIndex(of: "\t"), let until = Int64(line[line.index(after: tab)...]) else { return nil }
            return FewerTopic(topic: String(line[..<tab]), until: until)
        }
    }

    /// Topics from their lines (a topic has no control character); none from NULL or ''.
    static func topics(_ lines: String?) -> [String] {
        guard let lines, !lines.isEmpty else { return [] }
        return lines.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { String(Substring($0)) }
    }

    /// The week `text` names: `2026-W45` (as digest writes it) read from its bytes, anything else as
    /// ``ISOWeek/init(parsing:)`` reads it; `nil` when it names none.
    static func week(_ text: String) -> ISOWeek? {
        let fast: ISOWeek?? = text.utf8.withContiguousStorageIfAvailable { bytes -> ISOWeek? in
            guard bytes.count == 8, bytes[4] == UInt8(ascii: "-"), bytes[5] == UInt8(ascii: "W") else { return nil }
            var year = 0, week = 0
            for index in [0, 1, 2, 3, 6, 7] {
                let digit = Int(bytes[index]) - 48
                guard (0...9).contains(digit) else { return nil }
                if index < 4 { year = year * 10 + digit } else { week = week * 10 + digit }
            }
            return ISOWeek(year: year, week: week)
        }
        if case .some(.some(let week)) = fast { return week }
        return try? ISOWeek(parsing: text)
    }

    /// Whether `digest_users` and `digest_reader_preferences` are both digest's own views (their
    /// definitions read `digest_import_users` and `digest_import_reader_preferences`, as the
    /// migrations tell an adopter's view from digest's): only then does digest store preferences.
    static let ownViewsSQL = """
        SELECT EXISTS (SELECT 1 FROM pg_views WHERE viewname = 'digest_users' AND schemaname = current_schema()
                       AND definition LIKE '%digest_import_users%')
           AND EXISTS (SELECT 1 FROM pg_views WHERE viewname = 'digest_reader_preferences' AND schemaname = current_schema()
                       AND definition LIKE '%digest_import_reader_preferences%')
        """

    static func viewsAreDigests(_ connection: PostgresConnection) async throws -> Bool {
        try await connection.rows(PostgresQuery(unsafeSQL: ownViewsSQL)).first?.decode(Bool.self) ?? false
    }

    /// What digest stored of readers (its own tables, not the views), for the ids of `ids` it holds:
    /// their preferences (`off` from `opted_out`) and version (0 without a row). The caller holds the
    /// users' rows locked (``lockUsers(_:on:)``, a statement of its own before this one, so that this
    /// statement's snapshot sees what the transaction that held them before committed).
    static func stored(_ ids: [String], on connection: PostgresConnection) async throws -> [String: StoredPreferences] {
        let rows = try await connection.rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT u.id, u.opted_out, \(columns), coalesce(p.version, 0)
                    FROM digest_import_users u
                    LEFT JOIN LATERAL (SELECT * FROM digest_import_reader_preferences x WHERE x.id = u.id) p ON true
                    WHERE u.id = ANY($1::text[])
                    """,
                binds: binds(ids)))
        var stored: [String: StoredPreferences] = [:]
        stored.reserveCapacity(rows.count)
        for row in rows {
            let (id, off, every, from, paused, follow, mute, fewer, version) =
                try row.decode((String, Bool, Int?, String?, Int?, String?, String?, String?, Int).self)
            stored[id] = StoredPreferences(preferences: preferences(off: off, (every, from, paused, follow, mute, fewer)), version: version)
        }
        return stored
    }

    /// The reader's preferences as the run reads them (`digest_users` and `digest_reader_preferences`,
    /// which may be the publisher's own views), with the version digest stored (the view's `version`
    /// column; 0 while none was stored, and on a view without one), and whether the preferences view
    /// has a row for them (an export writes `null` for none of a publisher's view); `nil` for a reader
    /// `digest_users` does not hold. On `connection`, so that an export reads them in its snapshot.
    static func read(_ readerID: String, on connection: PostgresConnection) async throws -> (stored: StoredPreferences, hasRow: Bool)? {
        let rows = try await connection.rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT u.opted_out, \(columns), coalesce(p.version, 0), p.found IS NOT NULL
                    FROM digest_users u
                    LEFT JOIN LATERAL (SELECT x.every, x.from_week, x.paused_until, x.follow, x.mute,
                                              \(fewer) AS fewer, (to_jsonb(x) ->> 'version')::int8 AS version, true AS found
                                       FROM digest_reader_preferences x WHERE x.id COLLATE "C" = u.id COLLATE "C" LIMIT 1) p ON true
                    WHERE u.id COLLATE "C" = $1::text LIMIT 1
                    """,
                binds: binds(readerID)))
        guard let row = rows.first else { return nil }
        let (off, every, from, paused, follow, mute, fewer, version, hasRow) =
            try row.decode((Bool, Int?, String?, Int?, String?, String?, String?, Int, Bool).self)
        return (StoredPreferences(preferences: preferences(off: off, (every, from, paused, follow, mute, fewer)), version: version), hasRow)
    }

    /// Locks the rows of `digest_import_users` of `ids` (those it holds), in id order, for the rest of
    /// the transaction: every writer of preferences (an import's batch, ``PostgresDatabase``'s
    /// ``PostgresDatabase/setPreferences(of:to:ifVersion:source:messageID:at:)``) takes these locks
    /// first, so they take turns per reader and never wait for each other in a circle.
    static func lockUsers(_ ids: [String], on connection: PostgresConnection) async throws {
        try await connection.run(
            PostgresQuery(
                unsafeSQL: "SELECT 1 FROM digest_import_users WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE",
                binds: binds(ids)))
    }

    /// A change to store: the reader, what they had, what they have now, and how many recorded
    /// changes it stands for (the version it makes is `before.version + steps`).
    struct Change {
        var id: String
        var before: StoredPreferences
        var after: ReaderPreferences
        var steps = 1
    }

    /// A change as `digest_preference_changes` records it: a reader changed several times in one
    /// transaction (a request's presses) has a record for each step and one ``Change`` for them all.
    struct Record {
        var id: String
        var before: ReaderPreferences
        var after: ReaderPreferences
        var messageID: String?
        var action: ReaderAction?
    }

    /// Stores `changes` (their preferences, `opted_out` and version, one more than before) and records
    /// each in `digest_preference_changes` with `source`, `messageID` and `at`: three statements for
    /// any number of readers. Opting back in takes a new `seq` (rolling runs find the reader, as when
    /// an import opts them back in). The caller holds the readers' rows locked.
    static func store(
        _ changes: [Change], source: PreferenceSource, messageID: String?, at: Int64, action: ReaderAction? = nil,
        on connection: PostgresConnection
    ) async throws {
        let records = changes.map { Record(id: $0.id, before: $0.before.preferences, after: $0.after, messageID: messageID, action: action) }
        try await store(changes, records: records, source: source, at: at, on: connection)
    }

    /// Stores `changes` as ``store(_:source:messageID:at:action:on:)`` does and records `records`, in
    /// their order, each with its own message id and action.
    static func store(_ changes: [Change], records: [Record], source: PreferenceSource, at: Int64, on connection: PostgresConnection) async throws {
        guard !changes.isEmpty else { return }
        let ids = changes.map(\.id)
        let offs = changes.map(\.after.off)
        try await connection.run(
            """
            UPDATE digest_import_users u
            SET opted_out = c.off,
                seq = CASE WHEN u.opted_out AND NOT c.off THEN nextval('digest_user_seq') ELSE u.seq END
            FROM unnest(\(ids)::text[], \(offs)::bool[]) AS c(id, off)
            WHERE u.id = c.id AND u.opted_out IS DISTINCT FROM c.off
            """)
        // Topics as a JSON array each (arrays of arrays of different lengths do not fit a text[][]).
        let everies = changes.map { Int64($0.after.every) }
        // '' for none (arrays of optionals are not bound).
        let froms = changes.map { $0.after.from?.description ?? "" }
        let paused = changes.map { $0.after.pausedUntil?.description ?? "" }
        let follows = changes.map { topicsJSON($0.after.follow) }
        let mutes = changes.map { topicsJSON($0.after.mute) }
        let versions = changes.map { Int64($0.before.version + $0.steps) }
        let fewers = changes.map { fewerText($0.after.fewer) ?? "" }
        try await connection.run(
            """
            INSERT INTO digest_import_reader_preferences (id, every, from_week, paused_until, follow, mute, version, fewer)
            SELECT c.id, c.every, nullif(c.from_week, ''), nullif(c.paused, '')::date,
                   ARRAY(SELECT jsonb_array_elements_text(c.follow::jsonb)), ARRAY(SELECT jsonb_array_elements_text(c.mute::jsonb)),
                   c.version, nullif(c.fewer, '')
            FROM unnest(\(ids)::text[], \(everies)::int8[], \(froms)::text[], \(paused)::text[], \(follows)::text[], \(mutes)::text[],
                        \(versions)::int8[], \(fewers)::text[]) AS c(id, every, from_week, paused, follow, mute, version, fewer)
            ON CONFLICT (id) DO UPDATE SET every = excluded.every, from_week = excluded.from_week, paused_until = excluded.paused_until,
                follow = excluded.follow, mute = excluded.mute, version = excluded.version, fewer = excluded.fewer
            """)
        let recordIDs = records.map(\.id)
        let befores = records.map(\.before.json)
        let afters = records.map(\.after.json)
        // '' for none, as above.
        let messageIDs = records.map { $0.messageID ?? "" }
        let actions = records.map { $0.action?.rawValue ?? "" }
        try await connection.run(
            """
            INSERT INTO digest_preference_changes (user_id, at, source, message_id, before, after, action)
            SELECT c.id, to_timestamp(\(at)), \(source.rawValue), nullif(c.message_id, ''), c.before::json, c.after::json, nullif(c.action, '')
            FROM unnest(\(recordIDs)::text[], \(befores)::text[], \(afters)::text[], \(messageIDs)::text[], \(actions)::text[])
                WITH ORDINALITY AS c(id, before, after, message_id, action, n)
            ORDER BY c.n
            """)
    }

    static func topicsJSON(_ topics: [String]) -> String {
        var writer = JSONWriter(capacity: 16 + topics.count * 16)
        writer.beginArray()
        for topic in topics { writer.value(topic) }
        writer.endArray()
        return writer.string
    }

    static func binds(_ ids: [String]) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(ids)
        return binds
    }

    static func binds(_ id: String) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(id)
        return binds
    }
}

extension PostgresDatabase {
    /// The reader's preferences as the run reads them (`digest_users` and `digest_reader_preferences`,
    /// which may be the publisher's own views), with the version digest stored (the view's `version`
    /// column; 0 while none was stored, and on a view without one).
    public func preferences(of readerID: String) async throws -> StoredPreferences? {
        try await withPool { pool in
            try await pool.perform { try await PostgresPreferences.read(readerID, on: $0)?.stored }
        }
    }

    /// Stores the reader's preferences in one transaction that first locks their row of
    /// `digest_import_users` (two writers of one reader take turns, so of two writes conditional on
    /// the same version exactly one is stored); ``PreferenceWrite/managedElsewhere`` while either view
    /// is the publisher's own.
    public func setPreferences(
        of readerID: String, to preferences: ReaderPreferences, ifVersion: Int?, source: PreferenceSource, messageID: String?,
        at: Int64
    ) async throws -> PreferenceWrite {
        try await withPool { pool in
            try await pool.transaction { connection in
                guard try await PostgresPreferences.viewsAreDigests(connection) else { return .managedElsewhere }
                try await PostgresPreferences.lockUsers([readerID], on: connection)
                guard let stored = try await PostgresPreferences.stored([readerID], on: connection)[readerID] else { return .noReader }
                if let ifVersion, ifVersion != stored.version { return .versionMoved(current: stored) }
                var resolved = preferences.resolvingFrom(stored: stored.preferences, currentWeek: ISOWeek(utcInstant: at))
                // Only a press changes "fewer" (``applyAction(_:messageID:at:recordedAt:)``): kept as stored.
                resolved.fewer = stored.preferences.fewer
                guard resolved != stored.preferences else { return .stored(stored) }
                try await PostgresPreferences.store(
                    [.init(id: readerID, before: stored, after: resolved)], source: source, messageID: messageID, at: at, on: connection)
                return .stored(StoredPreferences(preferences: resolved, version: stored.version + 1))
            }
        }
    }

    /// The reader's recorded changes, newest first, the later stored first among changes of the same
    /// second; `nil` for a reader `digest_users` does not hold.
    public func preferenceChanges(of readerID: String, limit: Int) async throws -> [PreferenceChange]? {
        try await withPool { pool in
            guard try await !pool.rows("SELECT 1 FROM digest_users WHERE id COLLATE \"C\" = \(readerID)::text LIMIT 1").isEmpty else {
                return nil
            }
            let rows = try await pool.rows(
                """
                SELECT extract(epoch FROM at)::int8, source, message_id, before::text, after::text FROM digest_preference_changes
                WHERE user_id = \(readerID) ORDER BY at DESC, id DESC LIMIT \(max(0, limit))
                """)
            var changes: [PreferenceChange] = []
            changes.reserveCapacity(rows.count)
            for row in rows {
                let (at, sourceName, messageID, before, after) = try row.decode((Int64, String, String?, String, String).self)
                guard let source = PreferenceSource(rawValue: sourceName) else { continue }
                changes.append(
                    PreferenceChange(
                        at: at, source: source, messageID: messageID, before: ReaderPreferences(json: before) ?? ReaderPreferences(),
                        after: ReaderPreferences(json: after) ?? ReaderPreferences()))
            }
            return changes
        }
    }
}

extension PostgresDatabase: ReaderActionStore {
    /// A request's presses of messages' buttons in one transaction, a few statements for any number
    /// of them: the messages' readers, weeks and `fewer_topic` from their outbox rows;
    /// ``ActionOutcome/managedElsewhere`` while either view is the publisher's own; the readers' rows
    /// locked (as every writer of preferences does), then "the first press wins" from the recorded
    /// changes (their `action`, joined to the outbox by message id for the reader's week) and from
    /// the presses before it in the batch; each applied press recorded, each reader stored once.
    package func applyActions(_ presses: [ButtonPress], recordedAt: Int64) async throws -> [ActionOutcome] {
        guard !presses.isEmpty else { return [] }
        return try await withPool { pool in
            try await pool.transaction { connection in
                let messageIDs = Array(Set(presses.map(\.messageID)))
                var messages: [String: (user: String, week: String, fewerTopic: String?)] = [:]
                for row in try await connection.rows(
                    "SELECT message_id, user_id, week, report->>'fewer_topic' FROM digest_outbox WHERE message_id = ANY(\(messageIDs)::text[])")
                {
                    let (id, user, week, fewerTopic) = try row.decode((String, String, String, String?).self)
                    messages[id] = (user, week, fewerTopic)
                }
                guard !messages.isEmpty else { return presses.map { _ in .unknownMessage } }
                guard try await PostgresPreferences.viewsAreDigests(connection) else {
                    return presses.map { messages[$0.messageID] == nil ? .unknownMessage : .managedElsewhere }
                }
                let users = Array(Set(messages.values.map(\.user))).sorted()
                try await PostgresPreferences.lockUsers(users, on: connection)
                var current = try await PostgresPreferences.stored(users, on: connection)
                var pressed = Set<[String]>()
                for row in try await connection.rows(
                    """
                    SELECT c.user_id, c.action,
                           (SELECT o.week FROM digest_outbox o WHERE o.message_id = c.message_id AND o.user_id = c.user_id)
                    FROM digest_preference_changes c
                    WHERE c.user_id = ANY((SELECT \(users)::text[])::text[]) AND c.source = 'action' AND c.action IS NOT NULL
                    """)
                {
                    // The readers' ids behind a sub-select, so the planner does not estimate each one: on
                    // a table without statistics yet (a new store's, growing) it took the bound values
                    // for a parallel scan of the whole table (25 ms at 260,000 changes), where the reader
                    // index answers in 0.7 ms. Each recorded press's week by its message (one probe of
                    // the id index each: a join was planned as a hash join over the whole outbox).
                    let (user, action, week) = try row.decode((String, String, String?).self)
                    if let week { pressed.insert([user, action, week]) }
                }
                var zones: [String: String] = [:]
                for row in try await connection.rows("SELECT id, time_zone FROM digest_import_users WHERE id = ANY(\(users)::text[])") {
                    let (id, zone) = try row.decode((String, String).self)
                    zones[id] = zone
                }
                var outcomes: [ActionOutcome] = []
                var records: [PostgresPreferences.Record] = []
                var first: [String: StoredPreferences] = [:]
                var steps: [String: Int] = [:]
                for press in presses {
                    guard let message = messages[press.messageID] else {
                        outcomes.append(.unknownMessage)
                        continue
                    }
                    guard let stored = current[message.user] else {
                        outcomes.append(.noReader)
                        continue
                    }
                    let key = [message.user, press.action.rawValue, message.week]
                    guard !pressed.contains(key) else {
                        outcomes.append(.alreadyPressed)
                        continue
                    }
                    let after = ReaderActionEffect.apply(
                        press.action, to: stored.preferences, fewerTopic: message.fewerTopic, at: press.at, timeZone: zones[message.user] ?? "UTC")
                    guard after != stored.preferences else {
                        outcomes.append(.unchanged(stored))
                        continue
                    }
                    if first[message.user] == nil { first[message.user] = stored }
                    steps[message.user, default: 0] += 1
                    records.append(
                        .init(id: message.user, before: stored.preferences, after: after, messageID: press.messageID, action: press.action))
                    let next = StoredPreferences(preferences: after, version: stored.version + 1)
                    current[message.user] = next
                    pressed.insert(key)
                    outcomes.append(.applied(next))
                }
                let changes = first.keys.sorted().map { user in
                    PostgresPreferences.Change(id: user, before: first[user]!, after: current[user]!.preferences, steps: steps[user]!)
                }
                try await PostgresPreferences.store(changes, records: records, source: .action, at: recordedAt, on: connection)
                return outcomes
            }
        }
    }
}
