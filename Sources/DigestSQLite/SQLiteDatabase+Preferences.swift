public import DigestCore
public import DigestStore

/// Readers' preferences one reader at a time (the API, `digest readers`, a notification's buttons):
/// reads on a reader connection, each write one transaction on the writer (``SQLitePreferences``).
extension SQLiteDatabase: PreferenceStore {
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
                let after = preferences.resolvingFrom(stored: stored.preferences, currentWeek: ISOWeek(utcInstant: at))
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
