import DigestCore
import DigestStore

/// Readers' preferences in SQLite (migration 17): the `pref_*` columns of `users` and the change
/// history `digest_preference_changes`. Shared by the history reader (the columns read with every
/// user row), the import sink and ``SQLiteDatabase``'s ``PreferenceStore``; synchronous, on the
/// caller's connection.
enum SQLitePreferences {
    /// The preference columns as every user query selects them, in this order (``decode(_:at:off:)``).
    static let columns = "pref_every, pref_from, pref_paused_until, pref_follow, pref_mute, pref_fewer"

    /// The preferences of a user row whose ``columns`` start at `column`, `off` from its `opted_out`.
    /// A reader who chose nothing (`pref_every` NULL, most of them) costs one type check.
    static func decode(_ row: SQLiteStatement, at column: Int32, off: Bool) -> ReaderPreferences {
        guard !row.isNull(column) else { return ReaderPreferences(off: off) }
        var preferences = ReaderPreferences(off: off)
        preferences.every = row.int(column)
        // Read from the column's bytes: the run reads a batch's readers at once, and this is per reader.
        if !row.isNull(column + 1) { preferences.from = row.withText(column + 1, week) }
        if !row.isNull(column + 2) { preferences.pausedUntil = row.withText(column + 2, date) }
        if !row.isNull(column + 3) { preferences.follow = row.withText(column + 3, topics) }
        if !row.isNull(column + 4) { preferences.mute = row.withText(column + 4, topics) }
        if !row.isNull(column + 5) { preferences.fewer = fewer(row.string(column + 5)) }
        return preferences
    }

    /// `2026-W45` as ``ISOWeek``.
    static func week(_ text: String) -> ISOWeek? {
        var text = text
        return text.withUTF8(week)
    }

    /// `2026-W45` (as the store writes it) as ``ISOWeek``, from its bytes.
    static func week(_ bytes: UnsafeBufferPointer<UInt8>) -> ISOWeek? {
        guard bytes.count == 8, bytes[4] == UInt8(ascii: "-"), bytes[5] == UInt8(ascii: "W"),
            let year = number(bytes, 0..<4), let week = number(bytes, 6..<8)
        else { return nil }
        return ISOWeek(year: year, week: week)
    }

    /// `2026-12-14` (as the store writes it) as ``CivilDate``, from its bytes.
    static func date(_ bytes: UnsafeBufferPointer<UInt8>) -> CivilDate? {
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            let year = number(bytes, 0..<4), let month = number(bytes, 5..<7), let day = number(bytes, 8..<10)
        else { return nil }
        return CivilDate(year: year, month: month, day: day)
    }

    /// The decimal number of `range` of `bytes`, all digits.
    private static func number(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int? {
        var value = 0
        for index in range {
            let digit = Int(bytes[index]) &- 48
            guard digit >= 0, digit <= 9 else { return nil }
            value = value * 10 + digit
        }
        return value
    }

    /// Topics as stored: joined with a line feed (which no topic holds), from the column's bytes.
    static func topics(_ bytes: UnsafeBufferPointer<UInt8>) -> [String] {
        var topics: [String] = []
        var start = 0
        for index in 0...bytes.count where index == bytes.count || bytes[index] == 0x0A {
            if index > start { topics.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)) }
            start = index + 1
        }
        return topics
    }

    /// "Fewer" topics as `pref_fewer` holds them: a line each, the topic and its end (Unix seconds)
    /// separated by a tab (no topic holds a control character); NULL for none.
    static func fewerText(_ fewer: [FewerTopic]) -> String? {
        fewer.isEmpty ? nil : fewer.map { "\($0.topic)\t\($0.until)" }.joined(separator: "\n")
    }

    /// ``fewerText(_:)``'s topics back; a line that does not read is skipped.
    static func fewer(_ text: String) -> [FewerTopic] {
        text.split(separator: "\n").compactMap { line in
            guard let tab = line.lastIndex(of: "\t"), let until = Int64(line[line.index(after: tab)...]) else { return nil }
            return FewerTopic(topic: String(line[..<tab]), until: until)
        }
    }

    /// What the columns hold for `preferences` (`off` is `opted_out`'s): all NULL when, `off` aside,
    /// they are the defaults.
    static func values(
        _ preferences: ReaderPreferences
    ) -> (every: Int64?, from: String?, paused: String?, follow: String?, mute: String?, fewer: String?) {
        var rest = preferences
        rest.off = false
        // `fewer` counts: a reader with only a "fewer" press has `pref_every` set, as the run checks it first.
        guard !rest.isDefault else { return (nil, nil, nil, nil, nil, nil) }
        return (
            Int64(preferences.every), preferences.from?.description, preferences.pausedUntil?.description,
            preferences.follow.isEmpty ? nil : preferences.follow.joined(separator: "\n"),
            preferences.mute.isEmpty ? nil : preferences.mute.joined(separator: "\n"),
            fewerText(preferences.fewer)
        )
    }

    /// A user's row key, `seq` and stored preferences with their version, or `nil` when the store has
    /// no user `id`.
    static func stored(_ connection: SQLiteConnection, id: String) throws -> (key: Int64, stored: StoredPreferences)? {
        let statement = try connection.statement("SELECT pk, opted_out, pref_version, \(columns) FROM users WHERE id = ?")
        statement.bind(id, at: 1)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        let preferences = decode(statement, at: 3, off: statement.int(1) != 0)
        return (statement.int64(0), StoredPreferences(preferences: preferences, version: statement.int(2)))
    }

    /// Stores `after` for the user `key` whose preferences were `before`, when they differ: the
    /// columns, `opted_out` when `writeOff` (opting back in takes the next `seq`, as the import does),
    /// the version raised by 1 and the change recorded. Returns what is stored. Runs inside the
    /// caller's transaction.
    static func change(
        _ connection: SQLiteConnection, key: Int64, from before: StoredPreferences, to after: ReaderPreferences, writeOff: Bool,
        source: PreferenceSource, messageID: String?, at: Int64, action: ReaderAction? = nil
    ) throws -> StoredPreferences {
        guard after != before.preferences else { return before }
        let values = values(after)
        let update = try connection.statement(
            """
            UPDATE users SET pref_every = ?2, pref_from = ?3, pref_paused_until = ?4, pref_follow = ?5, pref_mute = ?6, pref_fewer = ?9,
                pref_version = pref_version + 1,
                opted_out = CASE WHEN ?7 THEN ?8 ELSE opted_out END,
                seq = CASE WHEN ?7 AND opted_out AND NOT ?8 THEN (SELECT max(seq) + 1 FROM users) ELSE seq END
            WHERE pk = ?1
            """)
        update.bind(key, at: 1)
        update.bind(values.every, at: 2)
        update.bind(values.from, at: 3)
        update.bind(values.paused, at: 4)
        update.bind(values.follow, at: 5)
        update.bind(values.mute, at: 6)
        update.bind(writeOff ? 1 : 0, at: 7)
        update.bind(after.off ? 1 : 0, at: 8)
        update.bind(values.fewer, at: 9)
        try update.run()
        let record = try connection.statement(
            "INSERT INTO digest_preference_changes (user_pk, at, source, message_id, before, after, action) VALUES (?, ?, ?, ?, ?, ?, ?)")
        record.bind(key, at: 1)
        record.bind(at, at: 2)
        record.bind(source.rawValue, at: 3)
        record.bind(messageID, at: 4)
        record.bind(before.preferences.json, at: 5)
        record.bind(after.json, at: 6)
        record.bind(action?.rawValue, at: 7)
        try record.run()
        return StoredPreferences(preferences: after, version: before.version + 1)
    }

    /// The user `key`'s recorded changes, newest first (of changes at the same instant, the later
    /// stored first), at most `limit`.
    static func changes(_ connection: SQLiteConnection, key: Int64, limit: Int) throws -> [PreferenceChange] {
        let statement = try connection.statement(
            """
            SELECT at, source, message_id, before, after FROM digest_preference_changes
            WHERE user_pk = ? ORDER BY at DESC, id DESC LIMIT ?
            """)
        statement.bind(key, at: 1)
        statement.bind(max(0, limit), at: 2)
        defer { statement.reset() }
        var changes: [PreferenceChange] = []
        while try statement.step() {
            guard let source = PreferenceSource(rawValue: statement.string(1)),
                let before = ReaderPreferences(json: statement.string(3)), let after = ReaderPreferences(json: statement.string(4))
            else {
                throw SQLiteError(code: 1, message: "digest_preference_changes: a row that does not read back", path: connection.path)
            }
            changes.append(
                PreferenceChange(at: statement.int64(0), source: source, messageID: statement.optionalString(2), before: before, after: after))
        }
        return changes
    }
}
