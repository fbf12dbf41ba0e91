package import DigestCore
package import DigestStore
import Foundation
package import Testing
import DigestImport

/// Readers' preferences on a store (docs/010, "Preferences"; the `PreferenceStore` protocol), at fixed
/// instants: what a `users.jsonl` line does to them, `setPreferences`, the change history and every
/// path that reads readers. Store-agnostic: each store's test target runs every case on its own
/// backend (`Tests/DigestSQLiteTests/SQLitePreferencesTests.swift`: `run(_:on: .sqlite)`), so a store
/// joins by adding the same few lines to its target.
package enum PreferencesConformanceTests {
    package enum Case: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case importReplacesTheWholeObjectAndALineWithoutLeavesIt
        case optedOutSetsOffAndALineWithNeitherLeavesIt
        case conflictingOffStoresNothing
        case fromIsTheStoredWeekOrTheImportsWeek
        case setPreferencesIsConditionalAndRecordsOnlyChanges
        case changesComeNewestFirstUpToTheLimit
        case everyReadPathReadsThePreferences

        package var testDescription: String { rawValue }
    }

    /// Runs one case on a new store of `backend`.
    package static func run(_ testCase: Case, on backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        switch testCase {
        case .importReplacesTheWholeObjectAndALineWithoutLeavesIt: try await importReplacesTheWholeObjectAndALineWithoutLeavesIt(store)
        case .optedOutSetsOffAndALineWithNeitherLeavesIt: try await optedOutSetsOffAndALineWithNeitherLeavesIt(store)
        case .conflictingOffStoresNothing: try await conflictingOffStoresNothing(store)
        case .fromIsTheStoredWeekOrTheImportsWeek: try await fromIsTheStoredWeekOrTheImportsWeek(store)
        case .setPreferencesIsConditionalAndRecordsOnlyChanges: try await setPreferencesIsConditionalAndRecordsOnlyChanges(store)
        case .changesComeNewestFirstUpToTheLimit: try await changesComeNewestFirstUpToTheLimit(store)
        case .everyReadPathReadsThePreferences: try await everyReadPathReadsThePreferences(store)
        }
    }

    // MARK: - Instants and helpers

    /// Wednesday noon (UTC) of 2026-W47, and of the weeks after it.
    static let w47: Int64 = 1_795_003_200
    static func instant(weeksAfterW47 weeks: Int, plusSeconds seconds: Int64 = 0) -> Int64 { w47 + Int64(weeks) * 604_800 + seconds }
    static func week(_ text: String) -> ISOWeek { try! ISOWeek(parsing: text) }

    /// The store's preferences API (every store implements it).
    static func preferenceStore(_ store: StoreHarness) throws -> any PreferenceStore {
        try #require(store.database as? any PreferenceStore, "\(store.backend) does not implement PreferenceStore")
    }

    /// Imports `lines` as a users file at `now`, in batches of `batchSize`; returns the summary.
    @discardableResult
    static func importUsers(_ store: StoreHarness, _ lines: [String], at now: Int64, batchSize: Int = 5_000) async throws -> ImportFileSummary {
        let path = try store.directory.write("users-\(UUID().uuidString).jsonl", lines: lines)
        return try await withImporter(store.database, at: now, batchSize: batchSize) { try await $0.importFile(path, as: .users) }
    }

    private static func withImporter<D: DigestDatabase, T>(
        _ database: D, at now: Int64, batchSize: Int, _ body: (HistoryImporter<ClockedSink>) async throws -> T
    ) async throws -> T {
        try await database.withImportSink { sink in
            var importer = HistoryImporter(sink: ClockedSink(base: sink))
            importer.now = { now }
            importer.batchSize = batchSize
            return try await body(importer)
        }
    }

    /// Either store's sink, by the importer's clock.
    struct ClockedSink: HistoryImportSink {
        let base: any HistoryImportSink
        func write(_ batch: ImportBatch) async throws -> ImportBatchResult { try await base.write(batch) }
        func write(_ batch: ImportBatch, at now: Int64) async throws -> ImportBatchResult { try await base.write(batch, at: now) }
    }

    static func reader(_ store: StoreHarness, _ id: String) async throws -> Reader? {
        try await store.withReader { try await $0.user(id: id)?.reader }
    }

    static func stored(_ store: StoreHarness, _ id: String) async throws -> StoredPreferences? {
        try await preferenceStore(store).preferences(of: id)
    }

    static func changes(_ store: StoreHarness, _ id: String, limit: Int = 100) async throws -> [PreferenceChange]? {
        try await preferenceStore(store).preferenceChanges(of: id, limit: limit)
    }

    static let full = ReaderPreferences(
        every: 2, from: week("2026-W45"), pausedUntil: CivilDate(year: 2026, month: 12, day: 14), follow: ["science", "Wissenschaft"],
        mute: ["sports", "😀 emoji"], off: false)
    static let fullLine =
        #"{"id":"u1","locale":"en","preferences":{"every":2,"from":"2026-W45","pausedUntil":"2026-12-14","follow":["science","Wissenschaft","science"],"mute":["sports","😀 emoji"],"off":false}}"#

    // MARK: - Import

    static func importReplacesTheWholeObjectAndALineWithoutLeavesIt(_ store: StoreHarness) async throws {
        #expect(try await importUsers(store, [fullLine], at: w47).written == 1)
        #expect(try await reader(store, "u1")?.preferences == full)
        #expect(try await stored(store, "u1") == StoredPreferences(preferences: full, version: 1))
        #expect(
            try await changes(store, "u1") == [
                PreferenceChange(at: w47, source: .import, messageID: nil, before: ReaderPreferences(), after: full)
            ])

        // A line with preferences replaces the whole object: the keys it leaves out take their defaults.
        let later = instant(weeksAfterW47: 1)
        let summary = try await importUsers(store, [#"{"id":"u1","locale":"en","preferences":{"mute":["x"]}}"#], at: later)
        #expect(summary.written == 1 && summary.unchanged == 0)
        let muted = ReaderPreferences(mute: ["x"])
        #expect(try await reader(store, "u1")?.preferences == muted)
        #expect(try await stored(store, "u1") == StoredPreferences(preferences: muted, version: 2))
        #expect(
            try await changes(store, "u1")?.first == PreferenceChange(at: later, source: .import, messageID: nil, before: full, after: muted))

        // The same line again changes nothing: no version, no change recorded, counted unchanged.
        let again = try await importUsers(store, [#"{"id":"u1","locale":"en","preferences":{"mute":["x"]}}"#], at: instant(weeksAfterW47: 2))
        #expect(again.written == 0 && again.unchanged == 1)
        // A line without preferences leaves them (its locale changes the reader, not the preferences).
        let without = try await importUsers(store, [#"{"id":"u1","locale":"pl"}"#], at: instant(weeksAfterW47: 3))
        #expect(without.written == 1)
        let read = try await reader(store, "u1")
        #expect(read?.locale == "pl" && read?.preferences == muted)
        #expect(try await stored(store, "u1")?.version == 2)
        #expect(try await changes(store, "u1")?.count == 2)
        // `null` is no preferences: left as they are.
        try await importUsers(store, [#"{"id":"u1","locale":"pl","preferences":null}"#], at: instant(weeksAfterW47: 4))
        #expect(try await stored(store, "u1") == StoredPreferences(preferences: muted, version: 2))
        // An object of defaults replaces them with the defaults: a change.
        try await importUsers(store, [#"{"id":"u1","locale":"pl","preferences":{}}"#], at: instant(weeksAfterW47: 5))
        #expect(try await stored(store, "u1") == StoredPreferences(preferences: ReaderPreferences(), version: 3))
        #expect(try await reader(store, "u1")?.preferences == ReaderPreferences())
        // A new reader without preferences has the defaults, version 0, no change.
        try await importUsers(store, [#"{"id":"u2"}"#], at: w47)
        #expect(try await stored(store, "u2") == StoredPreferences(preferences: ReaderPreferences(), version: 0))
        #expect(try await changes(store, "u2") == [])
    }

    static func optedOutSetsOffAndALineWithNeitherLeavesIt(_ store: StoreHarness) async throws {
        let off = ReaderPreferences(off: true)
        try await importUsers(store, [#"{"id":"u1"}"#, #"{"id":"u2","optedOut":true}"#], at: w47)
        #expect(try await reader(store, "u1")?.optedOut == false)
        // A new reader opted out: a change from the defaults.
        let u2 = try await reader(store, "u2")
        #expect(u2?.preferences == off && u2?.optedOut == true)
        #expect(try await stored(store, "u2") == StoredPreferences(preferences: off, version: 1))
        #expect(
            try await changes(store, "u2") == [PreferenceChange(at: w47, source: .import, messageID: nil, before: ReaderPreferences(), after: off)])

        // optedOut sets off for a reader who is there.
        let t1 = instant(weeksAfterW47: 1)
        try await importUsers(store, [#"{"id":"u1","optedOut":true}"#], at: t1)
        #expect(try await stored(store, "u1") == StoredPreferences(preferences: off, version: 1))
        #expect(try await changes(store, "u1")?.map(\.at) == [t1])

        // A line with neither leaves off as it is: stopped stays stopped (a change from before
        // preferences, where an absent optedOut meant false).
        let neither = try await importUsers(store, [#"{"id":"u1"}"#, #"{"id":"u2","optedOut":null}"#], at: instant(weeksAfterW47: 2))
        #expect(neither.unchanged == 2 && neither.written == 0)
        #expect(try await reader(store, "u1")?.optedOut == true)
        #expect(try await reader(store, "u2")?.optedOut == true)
        #expect(try await stored(store, "u1")?.version == 1)

        // Stopped through the preferences store, then a nightly import without the field: still off.
        let api = try preferenceStore(store)
        try await importUsers(store, [#"{"id":"u3"}"#], at: w47)
        #expect(try await api.setPreferences(of: "u3", to: off, ifVersion: nil, source: .api, messageID: nil, at: t1) == .stored(.init(preferences: off, version: 1)))
        try await importUsers(store, [#"{"id":"u3","locale":"de"}"#], at: instant(weeksAfterW47: 2))
        #expect(try await reader(store, "u3").map { ($0.locale, $0.optedOut) } ?? ("", false) == ("de", true))

        // Opting back in: optedOut false; other stored preferences stay.
        try await importUsers(store, [#"{"id":"u4","preferences":{"every":4,"from":"2026-W44","off":true}}"#], at: w47)
        let t3 = instant(weeksAfterW47: 3)
        try await importUsers(store, [#"{"id":"u4","optedOut":false}"#], at: t3)
        let paced = ReaderPreferences(every: 4, from: week("2026-W44"))
        #expect(try await stored(store, "u4") == StoredPreferences(preferences: paced, version: 2))
        #expect(try await reader(store, "u4")?.preferences == paced)
        var pacedOff = paced
        pacedOff.off = true
        #expect(
            try await changes(store, "u4") == [
                PreferenceChange(at: t3, source: .import, messageID: nil, before: pacedOff, after: paced),
                PreferenceChange(at: w47, source: .import, messageID: nil, before: ReaderPreferences(), after: pacedOff),
            ])

        // optedOut with preferences is their off; preferences without off and no optedOut: off false.
        try await importUsers(store, [#"{"id":"u4","optedOut":true,"preferences":{"mute":["m"]}}"#], at: instant(weeksAfterW47: 4))
        #expect(try await stored(store, "u4")?.preferences == ReaderPreferences(mute: ["m"], off: true))
        try await importUsers(store, [#"{"id":"u4","preferences":{"mute":["m"]}}"#], at: instant(weeksAfterW47: 5))
        #expect(try await stored(store, "u4") == StoredPreferences(preferences: ReaderPreferences(mute: ["m"]), version: 4))
        #expect(try await reader(store, "u4")?.optedOut == false)
    }

    static func conflictingOffStoresNothing(_ store: StoreHarness) async throws {
        try await importUsers(store, [#"{"id":"u1","preferences":{"mute":["a"]}}"#], at: w47)
        let summary = try await importUsers(
            store,
            [
                #"{"id":"u1","locale":"pl","optedOut":true,"preferences":{"mute":["b"],"off":false}}"#,
                #"{"id":"u-new","optedOut":false,"preferences":{"off":true}}"#,
            ], at: instant(weeksAfterW47: 1))
        #expect(summary.skipped == ["conflicting_off": 2] && summary.written == 0)
        let read = try await reader(store, "u1")
        #expect(read?.locale == "en" && read?.preferences == ReaderPreferences(mute: ["a"]))
        #expect(try await stored(store, "u1")?.version == 1)
        #expect(try await changes(store, "u1")?.count == 1)
        #expect(try await reader(store, "u-new") == nil)
        #expect(try await stored(store, "u-new") == nil)
        #expect(try await changes(store, "u-new") == nil)
    }

    static func fromIsTheStoredWeekOrTheImportsWeek(_ store: StoreHarness) async throws {
        // A pace without from counts from the import's week (UTC).
        try await importUsers(store, [#"{"id":"u1","preferences":{"every":2}}"#], at: w47)
        #expect(try await stored(store, "u1") == StoredPreferences(preferences: ReaderPreferences(every: 2, from: week("2026-W47")), version: 1))
        // The same pace again, weeks later, other keys changed: the stored from stays.
        let w49 = instant(weeksAfterW47: 2)
        try await importUsers(store, [#"{"id":"u1","preferences":{"every":2,"mute":["a"]}}"#], at: w49)
        #expect(try await stored(store, "u1") == StoredPreferences(preferences: ReaderPreferences(every: 2, from: week("2026-W47"), mute: ["a"]), version: 2))
        // The same line again: nothing changes (its from resolves to the stored one).
        let same = try await importUsers(store, [#"{"id":"u1","preferences":{"every":2,"mute":["a"]}}"#], at: instant(weeksAfterW47: 3))
        #expect(same.unchanged == 1 && same.written == 0)
        #expect(try await stored(store, "u1")?.version == 2)
        // Another pace: from the import's week.
        try await importUsers(store, [#"{"id":"u1","preferences":{"every":4}}"#], at: w49)
        #expect(try await stored(store, "u1")?.preferences == ReaderPreferences(every: 4, from: week("2026-W49")))
        // A from given is kept as given.
        try await importUsers(store, [#"{"id":"u1","preferences":{"every":4,"from":"2026-W40"}}"#], at: w49)
        #expect(try await stored(store, "u1")?.preferences == ReaderPreferences(every: 4, from: week("2026-W40")))
        // Weekly: no from.
        try await importUsers(store, [#"{"id":"u1","preferences":{"every":1}}"#], at: w49)
        #expect(try await stored(store, "u1") == StoredPreferences(preferences: ReaderPreferences(), version: 5))
        // The week is UTC's: Sunday 23:30 UTC of W48 is W48 (Monday already in Asia).
        let sundayLate = instant(weeksAfterW47: 1, plusSeconds: 4 * 86_400 + 11 * 3_600 + 1_800)
        try await importUsers(store, [#"{"id":"u2","timeZone":"Asia/Tokyo","preferences":{"every":2}}"#], at: sundayLate)
        #expect(try await stored(store, "u2")?.preferences.from == week("2026-W48"))
        #expect(try await changes(store, "u1")?.map(\.after.from) == [nil, week("2026-W40"), week("2026-W49"), week("2026-W47"), week("2026-W47")])
    }

    // MARK: - setPreferences and the change history

    static func setPreferencesIsConditionalAndRecordsOnlyChanges(_ store: StoreHarness) async throws {
        let api = try preferenceStore(store)
        let mute = ReaderPreferences(mute: ["sports"])
        #expect(try await api.setPreferences(of: "nobody", to: mute, ifVersion: nil, source: .api, messageID: nil, at: w47) == .noReader)
        #expect(try await api.preferences(of: "nobody") == nil)
        #expect(try await api.preferenceChanges(of: "nobody", limit: 100) == nil)

        try await importUsers(store, [#"{"id":"u1"}"#], at: w47)
        #expect(try await api.preferences(of: "u1") == StoredPreferences(preferences: ReaderPreferences(), version: 0))
        #expect(try await api.preferenceChanges(of: "u1", limit: 100) == [])
        // Storing the defaults over the defaults changes nothing.
        #expect(
            try await api.setPreferences(of: "u1", to: ReaderPreferences(), ifVersion: 0, source: .api, messageID: nil, at: w47)
                == .stored(.init(preferences: ReaderPreferences(), version: 0)))

        let t1 = instant(weeksAfterW47: 0, plusSeconds: 60)
        #expect(try await api.setPreferences(of: "u1", to: mute, ifVersion: 0, source: .api, messageID: nil, at: t1) == .stored(.init(preferences: mute, version: 1)))
        // The same again, unconditionally or on the right version: stored as it is, nothing recorded.
        #expect(try await api.setPreferences(of: "u1", to: mute, ifVersion: nil, source: .cli, messageID: nil, at: t1 + 1) == .stored(.init(preferences: mute, version: 1)))
        #expect(try await api.setPreferences(of: "u1", to: mute, ifVersion: 1, source: .api, messageID: nil, at: t1 + 2) == .stored(.init(preferences: mute, version: 1)))
        // On a version that moved: nothing stored.
        #expect(
            try await api.setPreferences(of: "u1", to: ReaderPreferences(every: 4), ifVersion: 0, source: .api, messageID: nil, at: t1 + 3)
                == .versionMoved(current: .init(preferences: mute, version: 1)))
        #expect(try await api.preferences(of: "u1") == StoredPreferences(preferences: mute, version: 1))
        #expect(try await api.preferenceChanges(of: "u1", limit: 100)?.count == 1)

        // A pace from a button: from is the week of `at` (UTC), the message recorded.
        let t2 = instant(weeksAfterW47: 1)
        let paced = ReaderPreferences(every: 2, from: week("2026-W48"), mute: ["sports"])
        #expect(
            try await api.setPreferences(of: "u1", to: ReaderPreferences(every: 2, mute: ["sports"]), ifVersion: 1, source: .action, messageID: "m-1", at: t2)
                == .stored(.init(preferences: paced, version: 2)))
        // The same pace later keeps its from.
        #expect(
            try await api.setPreferences(of: "u1", to: ReaderPreferences(every: 2, mute: ["sports"]), ifVersion: 2, source: .api, messageID: nil, at: instant(weeksAfterW47: 3))
                == .stored(.init(preferences: paced, version: 2)))
        // Off from the command line: the reader is opted out on every read.
        var stopped = paced
        stopped.off = true
        let t3 = instant(weeksAfterW47: 2)
        #expect(try await api.setPreferences(of: "u1", to: stopped, ifVersion: nil, source: .cli, messageID: nil, at: t3) == .stored(.init(preferences: stopped, version: 3)))
        let read = try await reader(store, "u1")
        #expect(read?.optedOut == true && read?.preferences == stopped)
        #expect(
            try await api.preferenceChanges(of: "u1", limit: 100) == [
                PreferenceChange(at: t3, source: .cli, messageID: nil, before: paced, after: stopped),
                PreferenceChange(at: t2, source: .action, messageID: "m-1", before: mute, after: paced),
                PreferenceChange(at: t1, source: .api, messageID: nil, before: ReaderPreferences(), after: mute),
            ])
        // Back on: the reader is read again, everything else as it was.
        #expect(try await api.setPreferences(of: "u1", to: paced, ifVersion: 3, source: .api, messageID: nil, at: t3 + 1) == .stored(.init(preferences: paced, version: 4)))
        #expect(try await reader(store, "u1").map { ($0.optedOut, $0.preferences) } ?? (true, stopped) == (false, paced))
        // An import line then replaces what the API stored, and is recorded as the import's.
        try await importUsers(store, [#"{"id":"u1","preferences":{"follow":["f"]}}"#], at: t3 + 2)
        let last = try await api.preferenceChanges(of: "u1", limit: 1)
        #expect(last == [PreferenceChange(at: t3 + 2, source: .import, messageID: nil, before: paced, after: ReaderPreferences(follow: ["f"]))])
        #expect(try await api.preferences(of: "u1")?.version == 5)
    }

    static func changesComeNewestFirstUpToTheLimit(_ store: StoreHarness) async throws {
        let api = try preferenceStore(store)
        try await importUsers(store, [#"{"id":"u1"}"#, #"{"id":"u2"}"#], at: w47)
        let values = (1...5).map { ReaderPreferences(mute: ["t\($0)"]) }
        // Stored in this order, at these instants: a later instant stored first, two at the same instant.
        let instants: [Int64] = [w47 + 10, w47 + 30, w47 + 20, w47 + 20, w47 + 40]
        for (value, at) in zip(values, instants) {
            _ = try await api.setPreferences(of: "u1", to: value, ifVersion: nil, source: .api, messageID: nil, at: at)
        }
        _ = try await api.setPreferences(of: "u2", to: values[0], ifVersion: nil, source: .api, messageID: nil, at: w47 + 50)
        let all = try #require(try await api.preferenceChanges(of: "u1", limit: 100))
        // Newest first; of the two at the same instant, the one stored later first.
        #expect(all.map(\.at) == [w47 + 40, w47 + 30, w47 + 20, w47 + 20, w47 + 10])
        #expect(all.map(\.after.mute) == [["t5"], ["t2"], ["t4"], ["t3"], ["t1"]])
        #expect(all.map(\.before.mute) == [["t4"], ["t1"], ["t3"], ["t2"], []])
        #expect(try await api.preferenceChanges(of: "u1", limit: 2)?.map(\.after.mute) == [["t5"], ["t2"]])
        #expect(try await api.preferenceChanges(of: "u1", limit: 0) == [])
        #expect(try await api.preferenceChanges(of: "u2", limit: 100)?.map(\.at) == [w47 + 50])
        #expect(try await api.preferences(of: "u1")?.version == 5)
    }

    // MARK: - Reading readers

    static func everyReadPathReadsThePreferences(_ store: StoreHarness) async throws {
        let lines = [
            #"{"id":"r1","timeZone":"Europe/Warsaw","devices":[{"token":"tok-1","platform":"android"}],"preferences":{"every":4,"from":"2026-W45","pausedUntil":"2026-12-24","follow":["science","tech"],"mute":["sports"]}}"#,
            #"{"id":"r2","timeZone":"UTC","devices":[{"token":"tok-2","platform":"ios"}]}"#,
            #"{"id":"r3","timeZone":"Europe/Warsaw","devices":[{"token":"tok-3","platform":"web"}],"preferences":{"mute":["politics"],"follow":["politics"]}}"#,
            #"{"id":"r4","timeZone":"UTC","devices":[{"token":"tok-4","platform":"android"}],"preferences":{"pausedUntil":"2027-01-04"}}"#,
            #"{"id":"r5","timeZone":"UTC","optedOut":true,"devices":[{"token":"tok-5","platform":"android"}],"preferences":{"every":2}}"#,
        ]
        try await importUsers(store, lines, at: w47, batchSize: 2)
        let expected: [String: ReaderPreferences] = [
            "r1": ReaderPreferences(
                every: 4, from: week("2026-W45"), pausedUntil: CivilDate(year: 2026, month: 12, day: 24), follow: ["science", "tech"],
                mute: ["sports"]),
            "r2": ReaderPreferences(),
            "r3": ReaderPreferences(follow: ["politics"], mute: ["politics"]),
            "r4": ReaderPreferences(pausedUntil: CivilDate(year: 2027, month: 1, day: 4)),
            "r5": ReaderPreferences(every: 2, from: week("2026-W47"), off: true),
        ]
        func preferences(_ users: [StoredReader]) -> [String: ReaderPreferences] {
            Dictionary(uniqueKeysWithValues: users.map { ($0.reader.id, $0.reader.preferences) })
        }
        let weekOfRun = week("2026-W48")
        // PostgreSQL hands out a week's batches as chunks of the week's split, made when its run begins.
        if store.backend == .postgres {
            _ = try await store.withLedger { try await $0.begin(week: weekOfRun, now: 0) }
        }
        try await store.withReader { reader in
            // The run's batches by cursor (the opted-out reader too, when the store reads them), in batches of 2.
            var byCursor: [StoredReader] = []
            var cursor: Int64 = 0
            while let batch = try await reader.nextBatch(week: weekOfRun, after: cursor, limit: 2) {
                byCursor += batch.users
                cursor = batch.position
                if store.backend == .postgres {
                    // A chunk done, so the next call claims the next one.
                    _ = try await store.withLedger {
                        try await $0.commit(week: weekOfRun, through: batch.position, messages: [], counters: RunCounters(), now: 0)
                    }
                }
            }
            for (id, value) in preferences(byCursor) { #expect(value == expected[id], "nextBatch(after:) \(id)") }
            #expect(Set(byCursor.map(\.reader.id)).isSuperset(of: ["r1", "r2", "r3", "r4"]))
            // By zones (SQLite: PostgreSQL claims a zone's chunks from a rolling run's plan, which
            // PostgresPreferencesTests reads apart).
            if store.backend == .sqlite {
                let zones = try await reader.timeZones()
                let byZones = try await reader.nextBatch(week: weekOfRun, zones: zones.map { ZoneCursor(zone: $0, seq: 0) }, limit: 10).users
                for (id, value) in preferences(byZones) { #expect(value == expected[id], "nextBatch(zones:) \(id)") }
                #expect(Set(byZones.map(\.reader.id)).isSuperset(of: ["r1", "r2", "r3", "r4"]))
            }
            // One by one, by prefix, after an id.
            for (id, value) in expected {
                let user = try await reader.user(id: id)
                #expect(user?.reader.preferences == value, "user(id:) \(id)")
                #expect(user?.reader.devices.count == 1)
            }
            #expect(preferences(try await reader.users(idPrefix: "r", limit: 10)) == expected)
            #expect(preferences(try await reader.users(afterID: "r2", limit: 10)) == expected.filter { $0.key > "r2" })
        }
        #expect(try await preferenceStore(store).preferences(of: "r1")?.preferences == expected["r1"])
    }
}
