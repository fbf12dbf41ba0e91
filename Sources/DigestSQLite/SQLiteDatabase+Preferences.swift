public import DigestCore
public import DigestStore

/// Readers' preferences one reader at a time (the API, `digest readers`, a notification's buttons):
/// reads on a reader connection, each write one transaction on the writer (``SQLitePreferences``).
extension SQLiteDatabase {
    public func preferences(of readerID: String) async throws -> StoredPreferences? {
        try await read { connection in try SQLitePreferences.stored(connection, id: readerID)?.stored }
    }

    public func setPreferences(
        of readerID: String, to preferences: ReaderPreferences, ifVersion: Int?, source: PreferenceSource, messageID: String?,
        at: Int64
    ) async throws -> PreferenceWrite {
        try await withConnection { connection in
            try connection.transaction {
                guard let (key, stored) = try SQLitePreferences.stored(connection, id: readerID) else { return .noReader }
                if let ifVersion, ifVersion != stored.version { return .versionMoved(current: stored) }
                var after = preferences.resolvingFrom(stored: stored.preferences, currentWeek: ISOWeek(utcInstant: at))
                // Only a press changes "fewer" (``applyAction(_:messageID:at:recordedAt:)``): kept as stored.
                after.fewer = stored.preferences.fewer
                return .stored(
                    try SQLitePreferences.change(
                        connection, key: key, from: stored, to: after, writeOff: true, source: source, messageID: messageID, at: at))
            }
        }
    }

    public func preferenceChanges(of readerID: String, limit: Int) async throws -> [PreferenceChange]? {
        try await read { connection in
            // One snapshot for both statements (a deferred transaction: this is a reader connection).
            try connection.execute("BEGIN")
            defer { try? connection.execute("COMMIT") }
            guard let (key, _) = try SQLitePreferences.stored(connection, id: readerID) else { return nil }
            return try SQLitePreferences.changes(connection, key: key, limit: limit)
        }
    }
}

extension SQLiteDatabase: ReaderActionStore {
    /// A request's presses of messages' buttons, one transaction on the writer: for each, the
    /// message's reader, week and `fewer_topic` from its outbox row, "the first press wins" from the
    /// recorded changes (their `action`, joined to the outbox by message id for the reader's week).
    package func applyActions(_ presses: [ButtonPress], recordedAt: Int64) async throws -> [ActionOutcome] {
        guard !presses.isEmpty else { return [] }
        return try await withConnection { connection in
            try connection.transaction { try presses.map { try Self.apply($0, recordedAt: recordedAt, on: connection) } }
        }
    }

    private static func apply(_ press: ButtonPress, recordedAt: Int64, on connection: SQLiteConnection) throws -> ActionOutcome {
        let find = try connection.statement(
            """
            SELECT user_id, week, json_extract(report, '$.fewer_topic') FROM digest_outbox WHERE message_id = ?
            """)
        find.bind(press.messageID, at: 1)
        guard try find.step() else {
            find.reset()
            return .unknownMessage
        }
        let (userID, week, fewerTopic) = (find.string(0), find.string(1), find.optionalString(2))
        find.reset()
        let zone = try connection.statement("SELECT time_zone FROM users WHERE id = ?")
        zone.bind(userID, at: 1)
        let timeZone = try zone.step() ? zone.string(0) : "UTC"
        zone.reset()
        guard let (key, stored) = try SQLitePreferences.stored(connection, id: userID) else { return .noReader }
        let pressed = try connection.statement(
            """
            SELECT 1 FROM digest_preference_changes c JOIN digest_outbox o ON o.message_id = c.message_id
            WHERE c.user_pk = ?1 AND c.source = 'action' AND c.action = ?2 AND o.week = ?3 AND o.user_id = ?4 LIMIT 1
            """)
        pressed.bind(key, at: 1)
        pressed.bind(press.action.rawValue, at: 2)
        pressed.bind(week, at: 3)
        pressed.bind(userID, at: 4)
        let already = try pressed.step()
        pressed.reset()
        if already { return .alreadyPressed }
        let after = ReaderActionEffect.apply(press.action, to: stored.preferences, fewerTopic: fewerTopic, at: press.at, timeZone: timeZone)
        guard after != stored.preferences else { return .unchanged(stored) }
        return .applied(
            try SQLitePreferences.change(
                connection, key: key, from: stored, to: after, writeOff: true, source: .action, messageID: press.messageID, at: recordedAt,
                action: press.action))
    }
}
