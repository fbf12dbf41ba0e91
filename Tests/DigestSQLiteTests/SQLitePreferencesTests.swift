import DigestCore
@testable import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Testing
import DigestImport

/// Readers' preferences on SQLite: the conformance suite every store runs, and what is SQLite's own
/// (migration 17 on a store with rows, the columns of a reader who chose nothing, the history table).
@Suite struct SQLitePreferencesTests {
    @Test(arguments: PreferencesConformanceTests.Case.allCases)
    func conformance(_ testCase: PreferencesConformanceTests.Case) async throws {
        try await PreferencesConformanceTests.run(testCase, on: .sqlite)
    }

    /// A store of version 16 with readers migrates in place: they read back with the defaults, their
    /// `off` from `opted_out`, at version 0; the columns stay NULL until a reader chooses something.
    @Test func aStoreOfVersion16GainsPreferencesWithEveryReaderAtTheDefaults() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("old.sqlite")
        do {
            let connection = try SQLiteConnection(path: path)
            #expect(try SQLiteSchema.migrate(connection, through: 16) == (0, 16))
            try connection.execute(
                """
                INSERT INTO users (id, locale, time_zone, opted_out) VALUES ('u1', 'en', 'UTC', 0), ('u2', 'pl', 'Europe/Warsaw', 1);
                """)
        }
        let database = SQLiteDatabase.sqlite(path: path)
        let migration = try await database.migrate()
        #expect(migration.from == 16 && migration.to == SQLiteSchema.latestVersion)
        #expect(try await database.preferences(of: "u1") == StoredPreferences(preferences: ReaderPreferences(), version: 0))
        #expect(try await database.preferences(of: "u2") == StoredPreferences(preferences: ReaderPreferences(off: true), version: 0))
        let readers = try await database.withHistoryReader { try await $0.users(idPrefix: "u", limit: 10) }
        #expect(readers.map(\.reader.preferences) == [ReaderPreferences(), ReaderPreferences(off: true)])
        // Off alone keeps the columns NULL (a reader who chose nothing else costs the run nothing).
        _ = try await database.setPreferences(of: "u1", to: ReaderPreferences(off: true), ifVersion: nil, source: .cli, messageID: nil, at: 100)
        let connection = try SQLiteConnection(path: path)
        #expect(
            try connection.lines("SELECT id, opted_out, pref_version, coalesce(pref_every, '-'), coalesce(pref_follow, '-') FROM users ORDER BY id")
                == "u1|1|1|-|-\nu2|1|0|-|-")
        #expect(try connection.lines("PRAGMA integrity_check") == "ok")
    }

    /// The columns as stored: topics joined with a line feed, the week and date as written, and the
    /// change history's JSON (`ReaderPreferences.json`) with its source.
    @Test func theColumnsAndTheHistoryHoldWhatTheDocsSay() async throws {
        let directory = try TemporaryDirectory()
        let database = SQLiteDatabase.sqlite(path: directory.path("store.sqlite"))
        _ = try await database.withImportSink { try await $0.write(.users([Reader(id: "u1", locale: "en", timeZone: "UTC", optedOut: false, devices: [])])) }
        let preferences = ReaderPreferences(
            every: 2, from: try ISOWeek(parsing: "2026-W05"), pausedUntil: CivilDate(year: 2027, month: 1, day: 2), follow: ["a b", "ż"],
            mute: ["c"])
        let write = try await database.setPreferences(of: "u1", to: preferences, ifVersion: 0, source: .action, messageID: "m-9", at: 1_795_003_200)
        #expect(write == .stored(StoredPreferences(preferences: preferences, version: 1)))
        let connection = try database.connect()
        #expect(
            try connection.lines("SELECT pref_every, pref_from, pref_paused_until, pref_follow, pref_mute, pref_version FROM users")
                == "2|2026-W05|2027-01-02|a b\nż|c|1")
        #expect(
            try connection.lines("SELECT user_pk, at, source, message_id, before, after FROM digest_preference_changes")
                == #"1|1795003200|action|m-9|{"every":1,"from":null,"pausedUntil":null,"follow":[],"mute":[],"off":false}|"#
                + #"{"every":2,"from":"2026-W05","pausedUntil":"2027-01-02","follow":["a b","ż"],"mute":["c"],"off":false}"#)
        // Back to the defaults: the columns NULL again.
        _ = try await database.setPreferences(of: "u1", to: ReaderPreferences(), ifVersion: 1, source: .api, messageID: nil, at: 1_795_003_300)
        #expect(try connection.lines("SELECT coalesce(pref_every, '-'), coalesce(pref_from, '-'), pref_version FROM users") == "-|-|2")
    }

    /// Rolling runs find a reader who opts back in (the next `seq`, by import or by the preferences
    /// store), and only then: a line that leaves `off` as it is, or another change, keeps their place.
    @Test func optingBackInTakesTheNextSeqAndNothingElseDoes() async throws {
        let directory = try TemporaryDirectory()
        let database = SQLiteDatabase.sqlite(path: directory.path("store.sqlite"))
        func importLines(_ lines: [String]) async throws {
            let path = try directory.write("users-\(UUID().uuidString).jsonl", lines: lines)
            _ = try await database.withImportSink { sink in
                var importer = HistoryImporter(sink: sink)
                importer.now = { 1_795_003_200 }
                return try await importer.importFile(path, as: .users)
            }
        }
        let connection = try database.connect()
        func seq() throws -> String { try connection.lines("SELECT seq FROM users WHERE id = 'u1'") }
        try await importLines([#"{"id":"u1","optedOut":true}"#, #"{"id":"u2"}"#])
        #expect(try seq() == "1")
        try await importLines([#"{"id":"u1"}"#, #"{"id":"u1x","preferences":{"mute":["a"]}}"#])
        #expect(try seq() == "1")
        try await importLines([#"{"id":"u1","optedOut":true,"preferences":{"every":2}}"#])
        #expect(try seq() == "1")
        try await importLines([#"{"id":"u1","optedOut":false}"#])
        #expect(try seq() == "4")
        #expect(try await database.preferences(of: "u1")?.preferences == ReaderPreferences(every: 2, from: try ISOWeek(parsing: "2026-W47")))
        _ = try await database.setPreferences(of: "u1", to: ReaderPreferences(off: true), ifVersion: nil, source: .api, messageID: nil, at: 1)
        #expect(try seq() == "4")
        _ = try await database.setPreferences(of: "u1", to: ReaderPreferences(), ifVersion: nil, source: .api, messageID: nil, at: 2)
        #expect(try seq() == "5")
    }

    /// The change history reads its JSON back whatever the topics hold (quotes, backslashes, emoji).
    @Test func preferencesComeBackFromTheirJSON() throws {
        let preferences = ReaderPreferences(
            every: 4, from: try ISOWeek(parsing: "2020-W53"), pausedUntil: CivilDate(year: 2026, month: 2, day: 28),
            follow: [#"a "quoted" \ topic"#, "😀"], mute: ["e\u{301}"], off: true)
        #expect(ReaderPreferences(json: preferences.json) == preferences)
        #expect(ReaderPreferences(json: ReaderPreferences().json) == ReaderPreferences())
        #expect(ReaderPreferences(json: "{}") == nil && ReaderPreferences(json: "not json") == nil)
        #expect(SQLitePreferences.week("2026-W05") == (try ISOWeek(parsing: "2026-W05")) && SQLitePreferences.week("2026W05") == nil)
    }
}
