import DigestCore
import DigestStore
import DigestTesting
import Foundation
import Testing

@testable import DigestPostgres

/// Reader preferences on PostgreSQL (docs/005, "Reader preferences"): the conformance suite every
/// store runs, and what only this store has — the view a publisher may own, the import's bulk
/// statements, two writers of one reader at once.
@Suite struct PostgresPreferencesTests {
    @Test(arguments: PreferencesConformanceTests.Case.allCases)
    func conformance(_ testCase: PreferencesConformanceTests.Case) async throws {
        try await PreferencesConformanceTests.run(testCase, on: .postgres)
    }

    /// A fixed instant (Unix seconds) and its ISO week in UTC.
    static let now: Int64 = 1_795_000_000
    static let week = ISOWeek(utcInstant: now)

    static func reader(_ id: String, zone: String = "UTC") -> Reader {
        Reader(id: id, locale: "en", timeZone: zone, optedOut: false, devices: [Device(token: "t-\(id)", platform: .android)])
    }

    /// A new store and its database (the harness runs the database for as long as it lives: keep it).
    static func store() async throws -> (StoreHarness, PostgresDatabase) {
        let store = try await StoreHarness(.postgres)
        return (store, store.database as! PostgresDatabase)
    }

    static func importUsers(_ users: [ImportedUser], into database: PostgresDatabase, at: Int64 = now) async throws -> ImportBatchResult {
        try await database.withImportSink { try await $0.write(.users(users), at: at) }
    }

    @Test func theImportStoresPreferencesWithAVersionAndAChangePerReader() async throws {
        let (store, database) = try await Self.store()
        let muting = ReaderPreferences(every: 2, follow: ["science"], mute: ["sports"])
        let result = try await Self.importUsers(
            [
                ImportedUser(reader: Self.reader("a"), preferences: muting, off: nil),
                ImportedUser(reader: Self.reader("b"), preferences: nil, off: true),
                ImportedUser(reader: Self.reader("c"), preferences: nil, off: nil),
                ImportedUser(reader: Self.reader("d"), preferences: nil, off: false),
            ], into: database)
        #expect(result == ImportBatchResult(written: 4, unchanged: 0))
        var expectedA = muting
        expectedA.from = Self.week
        #expect(try await database.preferences(of: "a") == StoredPreferences(preferences: expectedA, version: 1))
        #expect(try await database.preferences(of: "b") == StoredPreferences(preferences: ReaderPreferences(off: true), version: 1))
        #expect(try await database.preferences(of: "c") == StoredPreferences(preferences: ReaderPreferences(), version: 0))
        #expect(try await database.preferences(of: "d") == StoredPreferences(preferences: ReaderPreferences(), version: 0))
        #expect(try await database.preferences(of: "nobody") == nil)
        #expect(
            try await database.preferenceChanges(of: "a", limit: 10)
                == [PreferenceChange(at: Self.now, source: .import, messageID: nil, before: ReaderPreferences(), after: expectedA)])
        #expect(try await database.preferenceChanges(of: "c", limit: 10) == [])
        #expect(try await database.preferenceChanges(of: "nobody", limit: 10) == nil)
        #expect(try store.sql("SELECT count(*) FROM digest_preference_changes") == "2")
        // The change history keeps the text ReaderPreferences.json wrote.
        #expect(try store.sql("SELECT after::text FROM digest_preference_changes WHERE user_id = 'a'") == expectedA.json)

        // Every read path gives the preferences.
        let read = try await store.withReader { reader in
            (try await reader.user(id: "a")?.reader.preferences, try await reader.users(idPrefix: "", limit: 10).map(\.reader.preferences),
             try await reader.users(afterID: "a", limit: 10).map(\.reader.preferences))
        }
        #expect(read.0 == expectedA)
        #expect(read.1 == [expectedA, ReaderPreferences(off: true), ReaderPreferences(), ReaderPreferences()])
        #expect(read.2 == [ReaderPreferences(off: true), ReaderPreferences(), ReaderPreferences()])

        // The same lines again, a week later: nothing changes (the stored pace keeps its week).
        let later = Self.now + 7 * 86_400
        let again = try await Self.importUsers(
            [
                ImportedUser(reader: Self.reader("a"), preferences: muting, off: nil),
                ImportedUser(reader: Self.reader("b"), preferences: nil, off: true),
                ImportedUser(reader: Self.reader("c"), preferences: nil, off: nil),
            ], into: database, at: later)
        #expect(again == ImportBatchResult(written: 0, unchanged: 3))
        #expect(try store.sql("SELECT count(*) FROM digest_preference_changes") == "2")

        // Lines without preferences or off keep them; opting back in raises the version and the seq.
        let seq = try store.sql("SELECT seq FROM digest_import_users WHERE id = 'b'")
        let kept = try await Self.importUsers(
            [
                ImportedUser(reader: Self.reader("a"), preferences: nil, off: nil),
                ImportedUser(reader: Self.reader("b"), preferences: nil, off: false),
            ], into: database, at: later)
        #expect(kept == ImportBatchResult(written: 1, unchanged: 1))
        #expect(try await database.preferences(of: "a")?.version == 1)
        #expect(try await database.preferences(of: "b") == StoredPreferences(preferences: ReaderPreferences(), version: 2))
        #expect(try store.sql("SELECT seq FROM digest_import_users WHERE id = 'b'") != seq)
        #expect(
            try await database.preferenceChanges(of: "b", limit: 10).map { $0.map { "\($0.source) \($0.before.off)>\($0.after.off)" } }
                == ["import true>false", "import false>true"])

        // A new pace counts from the week it is stored in; the same pace keeps its week.
        _ = try await Self.importUsers(
            [ImportedUser(reader: Self.reader("a"), preferences: ReaderPreferences(every: 4), off: nil)], into: database, at: later)
        #expect(
            try await database.preferences(of: "a")
                == StoredPreferences(preferences: ReaderPreferences(every: 4, from: ISOWeek(utcInstant: later)), version: 2))
    }

    @Test func aReaderListedTwiceInABatchTakesWhatTheLinesSayInTurn() async throws {
        let (store, database) = try await Self.store()
        let first = ReaderPreferences(mute: ["sports"])
        let result = try await Self.importUsers(
            [
                ImportedUser(reader: Self.reader("a"), preferences: first, off: nil),
                ImportedUser(reader: Self.reader("a"), preferences: nil, off: true),
            ], into: database)
        #expect(result.written == 1)
        #expect(
            try await database.preferences(of: "a")
                == StoredPreferences(preferences: ReaderPreferences(mute: ["sports"], off: true), version: 1))
        withExtendedLifetime(store) {}
    }

    @Test func setPreferencesStoresChangesAndRecordsThem() async throws {
        let (store, database) = try await Self.store()
        _ = try await Self.importUsers([ImportedUser(reader: Self.reader("a"), preferences: nil, off: nil)], into: database)
        #expect(
            try await database.setPreferences(of: "nobody", to: ReaderPreferences(), ifVersion: nil, source: .api, messageID: nil, at: Self.now)
                == .noReader)
        let paused = ReaderPreferences(pausedUntil: CivilDate(year: 2026, month: 12, day: 14), follow: ["ünïcode ✓", "b"])
        #expect(
            try await database.setPreferences(of: "a", to: paused, ifVersion: 0, source: .api, messageID: nil, at: Self.now)
                == .stored(StoredPreferences(preferences: paused, version: 1)))
        // A write that changes nothing keeps the version and records nothing.
        #expect(
            try await database.setPreferences(of: "a", to: paused, ifVersion: nil, source: .cli, messageID: nil, at: Self.now + 1)
                == .stored(StoredPreferences(preferences: paused, version: 1)))
        #expect(
            try await database.setPreferences(of: "a", to: ReaderPreferences(), ifVersion: 0, source: .api, messageID: nil, at: Self.now)
                == .versionMoved(current: StoredPreferences(preferences: paused, version: 1)))
        let off = ReaderPreferences(off: true)
        // Two changes in the same second: the later stored first.
        _ = try await database.setPreferences(of: "a", to: off, ifVersion: 1, source: .action, messageID: "m-1", at: Self.now + 5)
        _ = try await database.setPreferences(of: "a", to: ReaderPreferences(), ifVersion: 2, source: .cli, messageID: nil, at: Self.now + 5)
        let changes = try #require(try await database.preferenceChanges(of: "a", limit: 10))
        #expect(
            changes == [
                PreferenceChange(at: Self.now + 5, source: .cli, messageID: nil, before: off, after: ReaderPreferences()),
                PreferenceChange(at: Self.now + 5, source: .action, messageID: "m-1", before: paused, after: off),
                PreferenceChange(at: Self.now, source: .api, messageID: nil, before: ReaderPreferences(), after: paused),
            ])
        #expect(try await database.preferenceChanges(of: "a", limit: 1) == Array(changes.prefix(1)))
        #expect(try await database.preferences(of: "a") == StoredPreferences(preferences: ReaderPreferences(), version: 3))
        #expect(try store.sql("SELECT opted_out FROM digest_import_users WHERE id = 'a'") == "f")
        // The run's reads see the stored values.
        #expect(try await store.withReader { try await $0.user(id: "a") }?.reader.preferences == ReaderPreferences())
    }

    @Test func ofTwoWritesConditionalOnTheSameVersionExactlyOneIsStored() async throws {
        let (store, database) = try await Self.store()
        let ids = (0..<6).map { "r\($0)" }
        _ = try await Self.importUsers(ids.map { ImportedUser(reader: Self.reader($0), preferences: nil, off: nil) }, into: database)
        for id in ids {
            async let one = database.setPreferences(
                of: id, to: ReaderPreferences(mute: ["one"]), ifVersion: 0, source: .api, messageID: nil, at: Self.now)
            async let two = database.setPreferences(
                of: id, to: ReaderPreferences(mute: ["two"]), ifVersion: 0, source: .api, messageID: nil, at: Self.now)
            let outcomes = [try await one, try await two]
            let stored = outcomes.compactMap { if case .stored(let value) = $0 { value } else { nil } }
            let moved = outcomes.compactMap { if case .versionMoved(let current) = $0 { current } else { nil } }
            #expect(stored.count == 1 && moved.count == 1, "\(id): \(outcomes)")
            #expect(stored.first?.version == 1)
            #expect(moved.first == stored.first)
            #expect(try await database.preferenceChanges(of: id, limit: 10)?.count == 1)
        }
        withExtendedLifetime(store) {}
    }

    @Test func theRunsBatchesCarryThePreferences() async throws {
        let (store, database) = try await Self.store()
        let muting = ReaderPreferences(mute: ["sports"])
        _ = try await Self.importUsers(
            [
                ImportedUser(reader: Self.reader("a"), preferences: muting, off: nil),
                ImportedUser(reader: Self.reader("b"), preferences: nil, off: nil),
            ], into: database)
        let chunk = try await store.withReader { reader in
            _ = try await store.withLedger { try await $0.begin(week: Self.week, now: 0) }
            let batch = try await reader.nextBatch(week: Self.week, after: 0, limit: 100)
            _ = try await store.withLedger {
                try await $0.commit(week: Self.week, through: batch?.position ?? 0, messages: [], counters: RunCounters(), now: 0)
            }
            return batch?.users.map(\.reader.preferences)
        }
        #expect(chunk == [muting, ReaderPreferences()])
        let zone = try await store.withReader { reader in
            let week = Self.week.next
            let cursors = try await store.withLedger { try await $0.zoneCursors(week: week, zones: ["UTC"], endsAt: [0], now: 1) }
            return try await reader.nextBatch(week: week, zones: cursors, limit: 100).users.map(\.reader.preferences)
        }
        #expect(zone == [muting, ReaderPreferences()])
    }

    /// The publisher's own views: the run and `preferences(of:)` read them, digest stores nothing.
    @Test func preferencesFromThePublishersViewAreManagedElsewhere() async throws {
        let (store, database) = try await Self.store()
        _ = try await Self.importUsers(
            [
                ImportedUser(reader: Self.reader("a"), preferences: nil, off: nil),
                ImportedUser(reader: Self.reader("b"), preferences: nil, off: nil),
            ], into: database)
        try store.sql(
            """
            CREATE TABLE app_settings (account text PRIMARY KEY, pace smallint, starting text, holiday date, likes text[], hides text[]);
            INSERT INTO app_settings VALUES ('a', 2, '2026-W45', '2026-12-14', ARRAY['science'], ARRAY['sports']);
            INSERT INTO app_settings VALUES ('b', 3, 'nonsense', NULL, NULL, NULL);
            DROP VIEW digest_reader_preferences;
            CREATE VIEW digest_reader_preferences AS
                SELECT account AS id, pace AS every, starting AS from_week, holiday AS paused_until, likes AS follow, hides AS mute
                FROM app_settings;
            """)
        let expectedA = ReaderPreferences(
            every: 2, from: try ISOWeek(parsing: "2026-W45"), pausedUntil: CivilDate(year: 2026, month: 12, day: 14), follow: ["science"],
            mute: ["sports"])
        #expect(try await database.preferences(of: "a") == StoredPreferences(preferences: expectedA, version: 0))
        // Values outside the contract read as their defaults.
        #expect(try await database.preferences(of: "b") == StoredPreferences(preferences: ReaderPreferences(), version: 0))
        #expect(try await store.withReader { try await $0.users(idPrefix: "", limit: 10) }.map(\.reader.preferences) == [expectedA, ReaderPreferences()])
        #expect(
            try await database.setPreferences(of: "a", to: ReaderPreferences(), ifVersion: nil, source: .api, messageID: nil, at: Self.now)
                == .managedElsewhere)
        // An import with preferences is refused; one without them writes off as before, recording nothing.
        let refused = await #expect(throws: PostgresStoreError.self) {
            try await Self.importUsers([ImportedUser(reader: Self.reader("a"), preferences: ReaderPreferences(), off: nil)], into: database)
        }
        #expect(refused?.kind == .configuration)
        #expect(refused?.description.contains("digest_reader_preferences is your own view") == true, "\(String(describing: refused))")
        _ = try await Self.importUsers([ImportedUser(reader: Self.reader("a"), preferences: nil, off: true)], into: database)
        #expect(try await database.preferences(of: "a")?.preferences.off == true)
        #expect(try store.sql("SELECT count(*) FROM digest_preference_changes") == "0")
        #expect(try store.sql("SELECT count(*) FROM digest_import_reader_preferences") == "0")

        // digest's preferences view again, but the publisher's readers: still managed elsewhere.
        try store.sql(
            """
            DROP VIEW digest_reader_preferences;
            CREATE VIEW digest_reader_preferences AS
                SELECT id, every, from_week, paused_until, follow, mute, version FROM digest_import_reader_preferences;
            """)
        #expect(
            try await database.setPreferences(of: "b", to: ReaderPreferences(mute: ["x"]), ifVersion: nil, source: .api, messageID: nil, at: Self.now)
                == .stored(StoredPreferences(preferences: ReaderPreferences(mute: ["x"]), version: 1)))
        try store.sql(
            """
            CREATE TABLE app_accounts (ref text PRIMARY KEY, lang text, tz text, stopped boolean);
            INSERT INTO app_accounts VALUES ('b', 'en', 'UTC', false);
            DROP VIEW digest_users;
            CREATE VIEW digest_users AS SELECT ref AS id, lang AS locale, tz AS time_zone, stopped AS opted_out FROM app_accounts;
            """)
        #expect(
            try await database.setPreferences(of: "b", to: ReaderPreferences(), ifVersion: nil, source: .api, messageID: nil, at: Self.now)
                == .managedElsewhere)
        // The reads join the publisher's readers to digest's preferences, whatever the ids' collation.
        #expect(try await database.preferences(of: "b") == StoredPreferences(preferences: ReaderPreferences(mute: ["x"]), version: 1))
        #expect(try await database.preferences(of: "a") == nil)
    }
}

extension PostgresPreferencesTests {
    @Test func aStoredWeekReadsFromItsBytesOrAsISOWeekParsesIt() throws {
        #expect(PostgresPreferences.week("2026-W45") == ISOWeek(year: 2026, week: 45))
        #expect(PostgresPreferences.week("2026-W53") == ISOWeek(year: 2026, week: 53))
        #expect(PostgresPreferences.week("2027-W53") == nil)
        #expect(PostgresPreferences.week("2026-W00") == nil)
        #expect(PostgresPreferences.week("2026w45") == ISOWeek(year: 2026, week: 45))
        #expect(PostgresPreferences.week("20x6-W45") == nil)
        #expect(PostgresPreferences.week("") == nil)
    }
}

extension PostgresPreferencesTests {
    /// Rolling runs find a reader who opts back in (the next `seq`, by import or by
    /// `setPreferences`), and only then.
    @Test func optingBackInTakesTheNextSeqAndNothingElseDoes() async throws {
        let (store, database) = try await Self.store()
        func seq() throws -> Int { Int(try store.sql("SELECT seq FROM digest_import_users WHERE id = 'u1'")) ?? -1 }
        _ = try await Self.importUsers([ImportedUser(reader: Self.reader("u1"), preferences: nil, off: true)], into: database)
        let first = try seq()
        _ = try await Self.importUsers([ImportedUser(reader: Self.reader("u1"), preferences: nil, off: nil)], into: database)
        _ = try await Self.importUsers(
            [ImportedUser(reader: Self.reader("u1"), preferences: ReaderPreferences(every: 2, mute: ["a"], off: true), off: true)],
            into: database)
        _ = try await database.setPreferences(
            of: "u1", to: ReaderPreferences(pausedUntil: CivilDate(year: 2027, month: 1, day: 1), off: true), ifVersion: nil, source: .api,
            messageID: nil, at: Self.now)
        #expect(try seq() == first)
        _ = try await Self.importUsers([ImportedUser(reader: Self.reader("u1"), preferences: nil, off: false)], into: database)
        let second = try seq()
        #expect(second > first)
        _ = try await database.setPreferences(of: "u1", to: ReaderPreferences(off: true), ifVersion: nil, source: .api, messageID: nil, at: Self.now)
        #expect(try seq() == second)
        _ = try await database.setPreferences(of: "u1", to: ReaderPreferences(), ifVersion: nil, source: .api, messageID: nil, at: Self.now)
        #expect(try seq() > second)
    }

    /// Topics of any text come back as stored: through the import's statements, the run's reads and the
    /// change history's JSON.
    @Test func topicsOfAnyTextComeBackAsStored() async throws {
        let (store, database) = try await Self.store()
        let topics = [#"quo"te"#, #"back\slash"#, "emoji 🧪", "ünïcode ✓", "comma, {brace}", "'single'", String(repeating: "é", count: 64)]
        let preferences = ReaderPreferences(follow: topics, mute: Array(topics.reversed()))
        _ = try await Self.importUsers([ImportedUser(reader: Self.reader("a"), preferences: preferences, off: nil)], into: database)
        _ = try await Self.importUsers([ImportedUser(reader: Self.reader("b"), preferences: nil, off: nil)], into: database)
        _ = try await database.setPreferences(of: "b", to: preferences, ifVersion: nil, source: .cli, messageID: nil, at: Self.now)
        for id in ["a", "b"] {
            #expect(try await database.preferences(of: id)?.preferences == preferences, "\(id)")
            #expect(try await store.withReader { try await $0.user(id: id) }?.reader.preferences == preferences, "\(id)")
            #expect(try await database.preferenceChanges(of: id, limit: 1)?.first?.after == preferences, "\(id)")
        }
    }
}

extension PostgresPreferencesTests {
    /// An import's batch and an API write of the same reader at once take turns: both changes are
    /// recorded, each one's `before` the other's `after`, and the version counts them.
    @Test func anImportAndAWriteOfTheSameReaderTakeTurns() async throws {
        let (store, database) = try await Self.store()
        let ids = (0..<200).map { "r\(1000 + $0)" }
        _ = try await Self.importUsers(ids.map { ImportedUser(reader: Self.reader($0), preferences: nil, off: nil) }, into: database)
        for round in 0..<4 {
            let target = ids[round * 50 + 25]
            let imported = ReaderPreferences(mute: ["import-\(round)"])
            let written = ReaderPreferences(follow: ["api-\(round)"])
            async let batch = Self.importUsers(
                ids.map { ImportedUser(reader: Self.reader($0), preferences: $0 == target ? imported : nil, off: nil) }, into: database)
            async let write = database.setPreferences(of: target, to: written, ifVersion: nil, source: .api, messageID: nil, at: Self.now)
            _ = try await (batch, write)
            let changes = try #require(try await database.preferenceChanges(of: target, limit: 10))
            #expect(changes.count == 2, "\(target): \(changes)")
            #expect(Set(changes.map(\.source)) == [.import, .api])
            if changes.count == 2 {
                #expect(changes[0].before == changes[1].after)
                #expect(changes[1].before == ReaderPreferences())
            }
            #expect(try await database.preferences(of: target) == StoredPreferences(preferences: changes[0].after, version: 2))
        }
        withExtendedLifetime(store) {}
    }
}
