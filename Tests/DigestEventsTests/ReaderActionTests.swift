import DigestCore
import DigestEvents
import DigestImport
import DigestStore
import DigestTesting
import Foundation
import Testing

/// The buttons that change preferences (`fewer`, `pause`, `off`) posted to `digest collect` over
/// real HTTP on loopback, on both stores, at the collector's fixed clock: a press needs its own
/// message's reply key, and the first press of a week wins.
@Suite struct ReaderActionTests {
    static let appKey = "app-key-0123456789abcdef"
    static let secret = "reply-secret-new-0123456789"
    static let oldSecret = "reply-secret-old-0123456789"
    /// The collector's keys: the new secret signs, the old one still verifies (a rotation).
    static func replyKeys() throws -> ReplyKeyFile { ReplyKeyFile(try ReplyKeys(secrets: [secret, oldSecret])) }
    static func sign(_ messageID: String, secret: String = secret) throws -> String {
        try ReplyKeys(secrets: [secret]).sign(messageID: messageID)
    }

    /// u1 in Tokyo (UTC+9) with an Android and an iOS message of 2026-W47, u2 in Warsaw with one;
    /// u1's Android message's report names `politics` as its `fewer_topic`.
    static func store(_ backend: Backend) async throws -> (StoreHarness, FixtureMessage, FixtureMessage, FixtureMessage) {
        let store = try await StoreHarness(backend)
        let readers = [("u1", "Asia/Tokyo"), ("u2", "Europe/Warsaw")].map {
            Reader(id: $0.0, locale: "en", timeZone: $0.1, optedOut: false, devices: [Device(token: "tok-\($0.0)", platform: .android)])
        }
        _ = try await store.withImporter { try await $0.sink.write(.users(readers)) }
        let a1 = FixtureMessage(user: "u1"), a2 = FixtureMessage(user: "u1", platform: .ios), b = FixtureMessage(user: "u2")
        try await store.write([a1, a2, b])
        let report = #"{"fewer_topic":"politics"}"#
        try store.sql(
            "UPDATE digest_outbox SET report = '\(report)'\(backend == .postgres ? "::jsonb" : "") WHERE message_id = '\(a1.messageID)'")
        return (store, a1, a2, b)
    }

    static func press(_ id: String, _ action: String, key: String?, at: Int64 = StoreHarness.createdAt + 60) -> String {
        let key = key.map { #","reply_key":"\#($0)""# } ?? ""
        return #"{"message_id":"\#(id)","type":"action","action":"\#(action)"\#(key),"at":"\#(Timestamp.format(at))"}"#
    }

    static func post(_ port: Int, _ events: [String]) async throws -> EventBatchResult {
        let (status, body) = try await HTTP.post(port: port, key: appKey, body: HTTP.body(events))
        #expect(status == 202)
        return try HTTP.result(body)
    }

    @Test(arguments: Backend.allCases) func pressesChangePreferencesOnlyWithTheirMessagesKeyAndOnceAWeek(backend: Backend) async throws {
        let (store, a1, a2, b) = try await Self.store(backend)
        // 15:01Z: already the 24th in Tokyo (the 23rd in UTC).
        let pauseAt = StoreHarness.createdAt + 6 * 3600 + 60
        let fewerAt = StoreHarness.createdAt + 120
        let keys = try Self.replyKeys()
        let results = try await store.withCollector(keys: AppKeys(keys: [Self.appKey]), replyKeys: keys) { port in
            let refused = try await Self.post(port, [
                Self.press(a1.messageID, "pause", key: nil),  // no key
                Self.press(a1.messageID, "pause", key: "AAAAAAAAAAAAAAAAAAAAAA"),  // forged
                Self.press(a1.messageID, "pause", key: try Self.sign(b.messageID)),  // another message's
                Self.press(b.messageID, "off", key: try Self.sign(b.messageID, secret: "a-secret-nobody-has-0123")),  // an unknown secret
                Self.press(a1.messageID, "later", key: nil),  // needs none
            ])
            // The old (second) secret still verifies; a replay and the same from the iOS message change nothing more.
            let pause = try await Self.post(port, [Self.press(a1.messageID, "pause", key: try Self.sign(a1.messageID, secret: Self.oldSecret), at: pauseAt)])
            let repeats = try await Self.post(port, [
                Self.press(a1.messageID, "pause", key: try Self.sign(a1.messageID), at: pauseAt + 60),
                Self.press(a2.messageID, "pause", key: try Self.sign(a2.messageID), at: pauseAt + 120),
            ])
            let others = try await Self.post(port, [
                Self.press(a1.messageID, "fewer", key: try Self.sign(a1.messageID), at: fewerAt),
                Self.press(a2.messageID, "off", key: try Self.sign(a2.messageID)),
                Self.press(b.messageID, "fewer", key: try Self.sign(b.messageID)),  // no fewer_topic: nothing to change
            ])
            return [refused, pause, repeats, others]
        }
        #expect(results[0] == EventBatchResult(accepted: 1, rejected: (0...3).map { RejectedEvent(index: $0, reason: .badReplyKey) }))
        #expect(results[1] == EventBatchResult(accepted: 1))
        #expect(results[2] == EventBatchResult(accepted: 1, duplicates: 1))
        #expect(results[3] == EventBatchResult(accepted: 3))
        // Refused presses were not recorded.
        #expect(try store.sql("SELECT count(*) FROM digest_events WHERE action = 'pause'") == "2")

        let u1 = try #require(try await store.database.preferences(of: "u1"))
        var expected = ReaderPreferences(pausedUntil: CivilDate(year: 2026, month: 12, day: 22), off: true)
        expected.fewer = [FewerTopic(topic: "politics", until: fewerAt + 8 * 7 * 86_400)]
        #expect(u1 == StoredPreferences(preferences: expected, version: 3))
        #expect(try await store.database.preferences(of: "u2") == StoredPreferences(preferences: ReaderPreferences(), version: 0))
        let changes = try #require(try await store.database.preferenceChanges(of: "u1", limit: 10))
        #expect(changes.count == 3)
        #expect(changes.allSatisfy { $0.source == .action && $0.at == StoreHarness.now })
        #expect(changes.map(\.messageID) == [a2.messageID, a1.messageID, a1.messageID])
        #expect(changes.map(\.after.off) == [true, false, false])
        #expect(changes.last?.after.pausedUntil == CivilDate(year: 2026, month: 12, day: 22))
        #expect(changes[1].after.fewer == expected.fewer)
        // The run reads them with the reader.
        #expect(try await store.withReader { try await $0.users(idPrefix: "u1", limit: 10) }.map(\.reader.preferences) == [expected])

        // The API's object (and an import's) keeps the stored "fewer".
        let write = try await store.database.setPreferences(
            of: "u1", to: ReaderPreferences(every: 2), ifVersion: nil, source: .api, messageID: nil, at: StoreHarness.now)
        guard case .stored(let stored) = write else {
            Issue.record("\(write)")
            return
        }
        #expect(stored.preferences.fewer == expected.fewer && stored.preferences.every == 2 && stored.version == 4)
        let reader = Reader(id: "u1", locale: "en", timeZone: "Asia/Tokyo", optedOut: false, devices: [Device(token: "tok-u1", platform: .android)])
        let imported = ImportedUser(reader: reader, preferences: ReaderPreferences(every: 4), off: nil)
        _ = try await store.withImporter { try await $0.sink.write(.users([imported])) }
        let after = try #require(try await store.database.preferences(of: "u1"))
        #expect(after.preferences.every == 4 && after.preferences.fewer == expected.fewer)
    }

    /// The first press wins per week: next week's message's press applies again (a `fewer` renewed to
    /// 8 weeks after it, a pause extended), and a pause never shortens one already stored.
    @Test(arguments: Backend.allCases) func aNewWeeksPressAppliesAgain(backend: Backend) async throws {
        let (store, a1, _, _) = try await Self.store(backend)
        let next = FixtureMessage(user: "u1", week: "2026-W48")
        try await store.write([next])
        try store.sql(
            "UPDATE digest_outbox SET report = '{\"fewer_topic\":\"politics\"}'\(backend == .postgres ? "::jsonb" : "") WHERE message_id = '\(next.messageID)'")
        let actions = try #require(store.database as? any ReaderActionStore)
        let t1 = StoreHarness.createdAt + 60, t2 = StoreHarness.createdAt + 7 * 86_400
        #expect(try await actions.applyAction(.fewer, messageID: a1.messageID, at: t1, recordedAt: t1) != .alreadyPressed)
        #expect(try await actions.applyAction(.fewer, messageID: a1.messageID, at: t2, recordedAt: t2) == .alreadyPressed)
        guard case .applied(let renewed) = try await actions.applyAction(.fewer, messageID: next.messageID, at: t2, recordedAt: t2) else {
            Issue.record("next week's fewer not applied")
            return
        }
        #expect(renewed.preferences.fewer == [FewerTopic(topic: "politics", until: t2 + 8 * 7 * 86_400)])
        guard case .applied(let paused) = try await actions.applyAction(.pause, messageID: next.messageID, at: t2, recordedAt: t2) else {
            Issue.record("pause not applied")
            return
        }
        // 2026-11-30T09:01Z is 18:01 in Tokyo: 28 days after the 30th.
        #expect(paused.preferences.pausedUntil == CivilDate(year: 2026, month: 12, day: 28))
        // An earlier press of another week's message does not shorten it.
        #expect(try await actions.applyAction(.pause, messageID: a1.messageID, at: t1, recordedAt: t2) == .unchanged(paused))
        #expect(try await actions.applyAction(.off, messageID: String(repeating: "0", count: 32), at: t2, recordedAt: t2) == .unknownMessage)
        #expect(try await store.database.preferenceChanges(of: "u1", limit: 10)?.count == 3)
    }

    /// A request's presses are one batch, applied in order in one transaction: the second device's
    /// press of the same action in the same week is not applied again, another action of the same
    /// reader applies on top of the first (one version each, a change recorded for each with its own
    /// message), another reader's and an unknown message's are answered for themselves.
    @Test(arguments: Backend.allCases) func aBatchOfPressesAppliesInOrder(backend: Backend) async throws {
        let (store, a1, a2, b) = try await Self.store(backend)
        let actions = try #require(store.database as? any ReaderActionStore)
        let at = StoreHarness.createdAt + 60
        let outcomes = try await actions.applyActions(
            [
                ButtonPress(.fewer, messageID: a1.messageID, at: at), ButtonPress(.fewer, messageID: a2.messageID, at: at),
                ButtonPress(.off, messageID: a2.messageID, at: at), ButtonPress(.pause, messageID: b.messageID, at: at),
                ButtonPress(.off, messageID: String(repeating: "0", count: 32), at: at),
            ], recordedAt: StoreHarness.now)
        var fewer = ReaderPreferences()
        fewer.fewer = [FewerTopic(topic: "politics", until: at + 8 * 7 * 86_400)]
        var off = fewer
        off.off = true
        // 2026-11-23T09:01Z is the 23rd in Warsaw: 28 days after it.
        let paused = ReaderPreferences(pausedUntil: CivilDate(year: 2026, month: 12, day: 21))
        #expect(
            outcomes == [
                .applied(StoredPreferences(preferences: fewer, version: 1)), .alreadyPressed, .applied(StoredPreferences(preferences: off, version: 2)),
                .applied(StoredPreferences(preferences: paused, version: 1)), .unknownMessage,
            ])
        #expect(try await store.database.preferences(of: "u1") == StoredPreferences(preferences: off, version: 2))
        let changes = try #require(try await store.database.preferenceChanges(of: "u1", limit: 10))
        #expect(changes.map(\.messageID) == [a2.messageID, a1.messageID])
        #expect(changes.map(\.after) == [off, fewer] && changes.map(\.before) == [fewer, ReaderPreferences()])
        #expect(try await store.database.preferences(of: "u2") == StoredPreferences(preferences: paused, version: 1))
    }

    /// On PostgreSQL with the publisher's own preferences view (no `fewer` column: none), a press is
    /// recorded and changes nothing.
    @Test func aPressIsRecordedButManagedElsewhereUnderThePublishersView() async throws {
        let (store, a1, _, _) = try await Self.store(.postgres)
        try store.sql(
            """
            CREATE TABLE app_settings (account text PRIMARY KEY, pace smallint);
            INSERT INTO app_settings VALUES ('u1', 2);
            DROP VIEW digest_reader_preferences;
            CREATE VIEW digest_reader_preferences AS SELECT account AS id, pace AS every, NULL::text AS from_week,
                NULL::date AS paused_until, NULL::text[] AS follow, NULL::text[] AS mute FROM app_settings;
            """)
        let result = try await store.withCollector(keys: AppKeys(keys: [Self.appKey]), replyKeys: try Self.replyKeys()) { port in
            try await Self.post(port, [Self.press(a1.messageID, "off", key: try Self.sign(a1.messageID))])
        }
        #expect(result == EventBatchResult(accepted: 1))
        #expect(try await store.database.preferences(of: "u1") == StoredPreferences(preferences: ReaderPreferences(every: 2), version: 0))
        #expect(try store.sql("SELECT count(*) FROM digest_preference_changes") == "0")
        let outcome = try await (store.database as! any ReaderActionStore).applyAction(
            .off, messageID: a1.messageID, at: StoreHarness.createdAt + 60, recordedAt: StoreHarness.now)
        #expect(outcome == .managedElsewhere)
    }

    /// Without `--reply-key-file` every press that changes preferences is refused; a test send's press
    /// with a valid key is answered in `test` and changes nothing, with a bad one refused.
    @Test(arguments: Backend.allCases) func noReplyKeysAndTestSends(backend: Backend) async throws {
        let (store, a1, _, _) = try await Self.store(backend)
        let without = try await store.withCollector(keys: AppKeys(keys: [Self.appKey])) { port in
            try await Self.post(port, [Self.press(a1.messageID, "off", key: try Self.sign(a1.messageID))])
        }
        #expect(without == EventBatchResult(rejected: [RejectedEvent(index: 0, reason: .badReplyKey)]))

        let test = OutboxMessage.messageID(dedupeKey: "test:ana-pixel:1")
        let send = TestSend(messageID: test, device: "Ana's Pixel", userID: "u1", week: a1.week, provider: .fcm, platform: "android", variant: "BigText")
        #expect(try await store.database.recordTestSend(send, now: StoreHarness.createdAt, perMinute: 2))
        let keys = try Self.replyKeys()
        let result = try await store.withCollector(keys: AppKeys(keys: [Self.appKey]), replyKeys: keys) { port in
            try await Self.post(port, [
                Self.press(test, "off", key: try Self.sign(test)),
                Self.press(test, "pause", key: try Self.sign(a1.messageID)),
            ])
        }
        #expect(result == EventBatchResult(accepted: 1, rejected: [RejectedEvent(index: 1, reason: .badReplyKey)], test: 1))
        #expect(try await store.database.preferences(of: "u1") == StoredPreferences(preferences: ReaderPreferences(), version: 0))
    }
}
