import DigestCore
import DigestImport
package import DigestStore
import Foundation
import Testing

/// A reader's data on a store (docs/008; the `ReaderDataStore` protocol): everything about a reader
/// exported as one JSON object in section order, forgotten for good, counted by a dry run, taken from
/// under a sender that holds a lease, and no longer taken by the collector. Store-agnostic: each
/// store's test target runs every case on its own backend
/// (`Tests/DigestSQLiteTests/SQLiteReaderDataTests.swift`: `run(_:on: .sqlite)`).
package enum ReaderDataConformanceTests {
    package enum Case: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case exportHoldsEverythingAboutTheReaderInSectionOrder
        case anUnknownReaderExportsNothing
        case forgetRemovesTheReaderAndLeavesTheOthersAsTheyWere
        case aDryRunCountsWhatTheForgetRemovesAndRemovesNothing
        case aForgottenLeaseSettlesNothingAndBuriesNoToken
        case theCollectorRejectsEventsOfAForgottenReader

        package var testDescription: String { rawValue }
    }

    /// Runs one case on a new store of `backend`.
    package static func run(_ testCase: Case, on backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        switch testCase {
        case .exportHoldsEverythingAboutTheReaderInSectionOrder: try await exportHoldsEverythingAboutTheReaderInSectionOrder(store)
        case .anUnknownReaderExportsNothing: try await anUnknownReaderExportsNothing(store)
        case .forgetRemovesTheReaderAndLeavesTheOthersAsTheyWere: try await forgetRemovesTheReaderAndLeavesTheOthersAsTheyWere(store)
        case .aDryRunCountsWhatTheForgetRemovesAndRemovesNothing: try await aDryRunCountsWhatTheForgetRemovesAndRemovesNothing(store)
        case .aForgottenLeaseSettlesNothingAndBuriesNoToken: try await aForgottenLeaseSettlesNothingAndBuriesNoToken(store)
        case .theCollectorRejectsEventsOfAForgottenReader: try await theCollectorRejectsEventsOfAForgottenReader(store)
        }
    }

    // MARK: - The readers' data

    /// When the readers' messages were written (Monday 2026-11-23T09:00:00Z), and the instants after.
    package static let t0 = StoreHarness.createdAt
    static let imported = t0 - 7 * 86_400
    static let leasedAt = t0 + 100
    static let settledAt = t0 + 200

    /// The tokens of reader `id`'s devices: FCM, APNs (lower-case hex) and a Web Push endpoint with keys.
    package struct Tokens: Sendable {
        package let fcm: String
        package let apns: String
        package let endpoint: String
        package let p256dh: String
        package let auth: String

        package init(_ id: String) {
            let seed = id.utf8.reduce(0) { ($0 &* 31 &+ Int($1)) & 0xFFFF }
            fcm = "fcm-\(id)-" + String(repeating: "f", count: 40)
            apns = String(format: "%04x", seed) + String(repeating: "ab", count: 30)
            endpoint = "https://push.example.net/send/\(id)-endpoint"
            p256dh = "BP256dh-\(id)-" + String(repeating: "K", count: 60)
            auth = "auth-\(id)-secret"
        }
    }

    /// The ids of reader `id`'s messages: sent (FCM), dead (APNs, the token unregistered), leased (Web
    /// Push) in 2026-W47; expired (FCM) and ready (APNs) in 2026-W48.
    package static func messageIDs(_ id: String) -> (sent: String, dead: String, leased: String, expired: String, ready: String) {
        ("\(id)-msg-sent", "\(id)-msg-dead", "\(id)-msg-leased", "\(id)-msg-expired", "\(id)-msg-ready")
    }

    /// The id of reader `id`'s test send.
    package static func testSendID(_ id: String) -> String { "\(id)-test-send" }

    /// Writes through the store's APIs, for each of `ids`: the reader (preferences imported), three
    /// devices, two reads, five messages (then sent, dead, leased, expired and ready: one lease at
    /// ``leasedAt`` for every reader, settled at ``settledAt``), picks, three events of the sent
    /// message, a "pause" press and an API change of preferences, and a test send with an event.
    package static func populate(_ store: StoreHarness, _ ids: [String]) async throws {
        _ = try await store.withImporter { importer in
            _ = try await importer.sink.write(
                .articles([
                    Article(id: "art-1", title: "One", url: "https://news.example/1", imageURL: nil, topics: ["science"], publishedAt: imported - 86_400, readingMinutes: 4),
                    Article(id: "art-2", title: "Two", url: "https://news.example/2", imageURL: nil, topics: ["sports"], publishedAt: imported - 86_400, readingMinutes: 6),
                ]), at: imported)
            for id in ids {
                let tokens = Tokens(id)
                let reader = Reader(
                    id: id, locale: "pl", timeZone: "Europe/Warsaw", optedOut: false,
                    devices: [
                        Device(token: tokens.fcm, platform: .android, registeredAt: imported - 3_600),
                        Device(token: tokens.apns, platform: .ios, topic: "com.example.news", provider: .apns),
                        Device(endpoint: tokens.endpoint, keys: .init(p256dh: tokens.p256dh, auth: tokens.auth), registeredAt: imported - 7_200),
                    ])
                let preferences = ReaderPreferences(every: 2, follow: ["science"])
                _ = try await importer.sink.write(.users([ImportedUser(reader: reader, preferences: preferences, off: nil)]), at: imported)
                _ = try await importer.sink.write(
                    .reads([
                        ImportedRead(userID: id, articleID: "art-1", readAt: imported + 600, seconds: 40),
                        ImportedRead(userID: id, articleID: "art-2", readAt: imported + 300, seconds: 95),
                    ]), at: imported)
            }
        }
        var w47: [OutboxMessage] = []
        var w48: [OutboxMessage] = []
        for id in ids {
            let tokens = Tokens(id)
            let m = messageIDs(id)
            var sent = OutboxMessage(
                dedupeKey: OutboxMessage.dedupeKey(week: "2026-W47", userID: id, token: tokens.fcm), week: "2026-W47", userID: id,
                platform: .android, variant: .bigText, message: Array(#"{"message":{"token":"\#(tokens.fcm)","data":{"message_id":"\#(m.sent)"}}}"#.utf8),
                report: #"{"arm":"B","fewer_topic":"science"}"#, availableAt: t0, picks: ["art-1", "art-2"], locale: "pl", messageID: m.sent,
                provider: .fcm, target: tokens.fcm)
            sent.timing = .habit
            sent.dueLocal = "10:00"
            w47.append(sent)
            w47.append(
                OutboxMessage(
                    dedupeKey: OutboxMessage.dedupeKey(week: "2026-W47", userID: id, token: tokens.apns), week: "2026-W47", userID: id,
                    platform: .ios, variant: .image, message: Array(#"{"aps":{"alert":{"title":"Your week"}},"message_id":"\#(m.dead)"}"#.utf8),
                    report: "{}", availableAt: t0, picks: ["art-1", "art-2"], locale: "pl", messageID: m.dead, provider: .apns, target: tokens.apns,
                    headers: #"{"apns-push-type":"alert","apns-topic":"com.example.news"}"#))
            w47.append(
                OutboxMessage(
                    dedupeKey: OutboxMessage.dedupeKey(week: "2026-W47", userID: id, token: tokens.endpoint), week: "2026-W47", userID: id,
                    platform: .web, variant: .defaultText, message: Array(#"{"title":"Your week","message_id":"\#(m.leased)"}"#.utf8),
                    report: "{}", availableAt: t0, picks: ["art-1", "art-2"], locale: "pl", messageID: m.leased, provider: .webpush,
                    target: tokens.endpoint))
            w48.append(
                OutboxMessage(
                    dedupeKey: OutboxMessage.dedupeKey(week: "2026-W48", userID: id, token: tokens.fcm), week: "2026-W48", userID: id,
                    platform: .android, variant: .defaultText, message: Array(#"{"message":{"token":"\#(tokens.fcm)"}}"#.utf8),
                    report: "{}", availableAt: t0, picks: ["art-2"], expiresAt: t0 + 10, locale: nil, messageID: m.expired, provider: .fcm,
                    target: tokens.fcm))
            w48.append(
                OutboxMessage(
                    dedupeKey: OutboxMessage.dedupeKey(week: "2026-W48", userID: id, token: tokens.apns), week: "2026-W48", userID: id,
                    platform: .ios, variant: .defaultText, message: Array(#"{"aps":{"alert":"later"}}"#.utf8),
                    report: "{}", availableAt: t0 + 30 * 86_400, picks: ["art-2"], locale: "pl", messageID: m.ready, provider: .apns,
                    target: tokens.apns, headers: #"{"apns-push-type":"alert"}"#))
        }
        try await store.withLedger { ledger in
            for (name, messages) in [("2026-W47", w47), ("2026-W48", w48)] {
                let week = try ISOWeek(parsing: name)
                _ = try await ledger.begin(week: week, now: t0)
                _ = try await ledger.commit(week: week, through: 0, messages: messages, counters: RunCounters(), now: t0)
            }
        }
        try await store.withConsumer { consumer in
            let leased = try await consumer.lease(
                owner: "sender-1", limit: 100, now: leasedAt, leaseSeconds: 3_600, maxAttempts: 5, providers: Set(Provider.allCases))
            var settlements: [Settlement] = []
            for id in ids {
                let tokens = Tokens(id)
                let sent = try #require(leased.first { $0.userID == id && $0.target == tokens.fcm })
                let dead = try #require(leased.first { $0.userID == id && $0.target == tokens.apns })
                settlements += [
                    .sent(id: sent.id, name: "projects/p/messages/\(id)"),
                    .unregistered(id: dead.id, reason: "UNREGISTERED: BadDeviceToken", diedAt: settledAt),
                ]
            }
            #expect(try await consumer.settle(settlements, owner: "sender-1", now: settledAt, maxAttempts: 5) == settlements.count)
        }
        let events = ids.flatMap { id in
            let sent = messageIDs(id).sent
            return [
                AppEvent(messageID: sent, type: .received, at: t0 + 300), AppEvent(messageID: sent, type: .opened, at: t0 + 400),
                AppEvent(messageID: sent, type: .action, action: "pause", at: t0 + 500),
            ]
        }.enumerated().map { IndexedEvent(index: $0.offset, event: $0.element) }
        #expect(try await record(store.database, events, now: t0 + 600).accepted == events.count)
        let actions = try #require(store.database as? any ReaderActionStore)
        let preferences: any PreferenceStore = store.database
        for id in ids {
            guard case .applied = try await actions.applyAction(.pause, messageID: messageIDs(id).sent, at: t0 + 500, recordedAt: t0 + 600) else {
                Issue.record("the pause press of \(id) was not applied")
                return
            }
            _ = try await preferences.setPreferences(
                of: id, to: ReaderPreferences(every: 1, follow: ["science", "culture"]), ifVersion: nil, source: .api, messageID: nil, at: t0 + 700)
            let send = TestSend(
                messageID: testSendID(id), device: "Editor's phone", userID: id, week: "2026-W48", provider: .fcm, platform: "android",
                variant: "Default")
            #expect(try await store.database.recordTestSend(send, now: t0 + 800, perMinute: 10))
        }
        let testEvents = ids.enumerated().map { IndexedEvent(index: $0.offset, event: AppEvent(messageID: testSendID($0.element), type: .displayed, at: t0 + 850)) }
        #expect(try await record(store.database, testEvents, now: t0 + 900).test == ids.count)
    }

    static func record<D: DigestDatabase>(_ database: D, _ events: [IndexedEvent], now: Int64) async throws -> EventBatchResult {
        try await database.withEventSink { try await $0.record(events, now: now) }
    }

    /// The store's reader data API.
    static func readerData(_ store: StoreHarness) throws -> any ReaderDataStore {
        try #require(store.database as? any ReaderDataStore, "\(store.backend) does not implement ReaderDataStore")
    }

    /// Reader `id`'s export as written, and whether the store held the reader.
    package static func export(_ store: StoreHarness, _ id: String) async throws -> (held: Bool, bytes: [UInt8]) {
        var bytes: [UInt8] = []
        let export = ReaderExport { bytes += $0 }
        let held = try await readerData(store).exportReader(id, into: export)
        return (held, bytes)
    }

    /// The keys of the top-level object of `bytes`, in the order written.
    package static func topLevelKeys(_ bytes: [UInt8]) -> [String] {
        var keys: [String] = []
        var depth = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                var end = index + 1
                while bytes[end] != UInt8(ascii: "\"") { end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1 }
                if depth == 1, end + 1 < bytes.count, bytes[end + 1] == UInt8(ascii: ":") {
                    keys.append(String(decoding: bytes[(index + 1)..<end], as: UTF8.self))
                }
                index = end + 1
                continue
            }
            if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") { depth += 1 }
            if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") { depth -= 1 }
            index += 1
        }
        return keys
    }

    static func json(_ text: String) throws -> StoredJSON { try StoredJSON(decoding: Data(text.utf8)) }

    /// An object of the values that are not `nil`.
    static func object(_ pairs: KeyValuePairs<String, StoredJSON?>) -> StoredJSON {
        var object: [String: StoredJSON] = [:]
        for (key, value) in pairs { if let value { object[key] = value } }
        return .object(object)
    }

    static func time(_ seconds: Int64) -> StoredJSON { .string(Timestamp.format(seconds)) }

    // MARK: - Export

    static func exportHoldsEverythingAboutTheReaderInSectionOrder(_ store: StoreHarness) async throws {
        let id = "reader/ä 1"
        try await populate(store, [id, "someone-else"])
        let (held, bytes) = try await export(store, id)
        #expect(held)
        #expect(bytes.last == UInt8(ascii: "\n") && bytes.filter { $0 == UInt8(ascii: "\n") }.count == 1)
        #expect(topLevelKeys(bytes) == ReaderExport.Section.allCases.map(\.rawValue))
        guard case .object(let export) = try StoredJSON(decoding: Data(bytes)) else {
            Issue.record("the export is not an object")
            return
        }
        #expect(export["reader"] == object(["id": .string(id), "locale": .string("pl"), "zone": .string("Europe/Warsaw")]))

        // Preferences as the preferences API reads them, with their version; their changes oldest first.
        let api: any PreferenceStore = store.database
        let stored = try #require(try await api.preferences(of: id))
        #expect(stored.version == 3)
        guard case .object(var preferences) = try json(stored.preferences.json) else { return }
        preferences["version"] = .integer(3)
        #expect(export["preferences"] == .object(preferences))
        let changes = try #require(try await api.preferenceChanges(of: id, limit: 10)).reversed().map { $0 }
        #expect(changes.map(\.source) == [.import, .action, .api])
        let expectedChanges = try changes.enumerated().map { index, change in
            object([
                "at": time(change.at), "source": .string(change.source.rawValue), "before": try json(change.before.json),
                "after": try json(change.after.json), "message_id": change.messageID.map { .string($0) },
                "action": index == 1 ? .string("pause") : nil,
            ])
        }
        #expect(export["preference_changes"] == .array(expectedChanges))
        #expect(changes.map(\.at) == [imported, t0 + 600, t0 + 700] && changes[1].messageID == messageIDs(id).sent)

        // Every device, its keys in full, the APNs token remembered dead.
        let tokens = Tokens(id)
        #expect(
            export["devices"]
                == .array([
                    object([
                        "token": .string(tokens.fcm), "platform": "android", "provider": "fcm", "registered_at": time(imported - 3_600),
                        "list_position": .integer(0),
                    ]),
                    object([
                        "token": .string(tokens.apns), "platform": "ios", "provider": "apns", "topic": "com.example.news", "list_position": .integer(1),
                        "dead": object(["died_at": time(settledAt), "reason": "UNREGISTERED: BadDeviceToken"]),
                    ]),
                    object([
                        "token": .string(tokens.endpoint), "platform": "web", "provider": "webpush", "registered_at": time(imported - 7_200),
                        "list_position": .integer(2), "keys": object(["p256dh": .string(tokens.p256dh), "auth": .string(tokens.auth)]),
                    ]),
                ]))
        #expect(
            export["reads"]
                == .array([
                    object(["article_id": "art-2", "read_at": time(imported + 300), "seconds": .integer(95)]),
                    object(["article_id": "art-1", "read_at": time(imported + 600), "seconds": .integer(40)]),
                ]))

        // Messages in every state, by week and as written, with the body and headers as stored.
        let m = messageIDs(id)
        let messages: [StoredJSON] = [
            object([
                "message_id": .string(m.sent), "week": "2026-W47", "platform": "android", "provider": "fcm", "variant": "BigText", "state": "sent",
                "target": .string(tokens.fcm), "message": try json(#"{"message":{"token":"\#(tokens.fcm)","data":{"message_id":"\#(m.sent)"}}}"#),
                "report": try json(#"{"arm":"B","fewer_topic":"science"}"#), "locale": "pl", "timing": "habit", "due_local": "10:00",
                "attempts": .integer(1), "created_at": time(t0), "available_at": time(t0), "sent_at": time(settledAt), "settled_at": time(settledAt),
            ]),
            object([
                "message_id": .string(m.dead), "week": "2026-W47", "platform": "ios", "provider": "apns", "variant": "Image", "state": "dead",
                "target": .string(tokens.apns), "message": try json(#"{"aps":{"alert":{"title":"Your week"}},"message_id":"\#(m.dead)"}"#),
                "headers": try json(#"{"apns-push-type":"alert","apns-topic":"com.example.news"}"#), "report": .object([:]), "locale": "pl",
                "attempts": .integer(1), "last_error": "UNREGISTERED: BadDeviceToken", "created_at": time(t0), "available_at": time(t0),
                "settled_at": time(settledAt),
            ]),
            object([
                "message_id": .string(m.leased), "week": "2026-W47", "platform": "web", "provider": "webpush", "variant": "Default",
                "state": "leased", "target": .string(tokens.endpoint), "message": try json(#"{"title":"Your week","message_id":"\#(m.leased)"}"#),
                "report": .object([:]), "locale": "pl", "attempts": .integer(1), "created_at": time(t0), "available_at": time(t0),
            ]),
            object([
                "message_id": .string(m.ready), "week": "2026-W48", "platform": "ios", "provider": "apns", "variant": "Default", "state": "ready",
                "target": .string(tokens.apns), "message": try json(#"{"aps":{"alert":"later"}}"#), "headers": try json(#"{"apns-push-type":"alert"}"#),
                "report": .object([:]), "locale": "pl", "attempts": .integer(0), "created_at": time(t0), "available_at": time(t0 + 30 * 86_400),
            ]),
        ]
        guard case .array(let exported) = export["messages"] else {
            Issue.record("no messages")
            return
        }
        // The expired one's error names its TTL's end in each store's words: checked apart.
        let expired = exported.first { $0.field("message_id") == .string(m.expired) }
        #expect(exported.filter { $0.field("message_id") != .string(m.expired) } == messages)
        #expect(exported.count == 5 && exported.firstIndex { $0.field("message_id") == .string(m.expired) } == 3)
        guard case .object(var rest) = expired, case .string(let error) = rest.removeValue(forKey: "last_error") else {
            Issue.record("the expired message has no last_error")
            return
        }
        #expect(error.hasPrefix("EXPIRED:"))
        #expect(
            StoredJSON.object(rest)
                == object([
                    "message_id": .string(m.expired), "week": "2026-W48", "platform": "android", "provider": "fcm", "variant": "Default",
                    "state": "expired", "target": .string(tokens.fcm), "message": try json(#"{"message":{"token":"\#(tokens.fcm)"}}"#),
                    "report": .object([:]), "attempts": .integer(0), "created_at": time(t0), "available_at": time(t0), "settled_at": time(leasedAt),
                ]))

        #expect(
            export["picks"]
                == .array([
                    object(["week": "2026-W47", "article_ids": .array(["art-1", "art-2"])]),
                    object(["week": "2026-W48", "article_ids": .array(["art-2"])]),
                ]))
        let received = time(t0 + 600)
        #expect(
            export["events"]
                == .array([
                    object(["message_id": .string(m.sent), "type": "received", "at": time(t0 + 300), "received_at": received]),
                    object(["message_id": .string(m.sent), "type": "opened", "at": time(t0 + 400), "received_at": received]),
                    object(["message_id": .string(m.sent), "type": "action", "action": "pause", "at": time(t0 + 500), "received_at": received]),
                ]))
        #expect(
            export["test_sends"]
                == .array([
                    object([
                        "message_id": .string(testSendID(id)), "sent_at": time(t0 + 800), "device": "Editor's phone", "week": "2026-W48",
                        "provider": "fcm", "platform": "android", "variant": "Default",
                        "events": .array([
                            object([
                                "message_id": .string(testSendID(id)), "type": "displayed", "at": time(t0 + 850), "received_at": time(t0 + 900),
                            ])
                        ]),
                    ])
                ]))
        // Nothing of the other reader.
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(!text.contains("someone-else"))
    }

    static func anUnknownReaderExportsNothing(_ store: StoreHarness) async throws {
        try await populate(store, ["known"])
        let (held, bytes) = try await export(store, "unknown")
        #expect(!held && bytes.isEmpty)
        #expect(try await export(store, "known").held)
    }

    // MARK: - Forget

    /// The rows of one reader of ``populate(_:_:)``, whatever the store's tables: the reader, three
    /// devices, two reads, three preference changes, five messages, two weeks of picks, three events,
    /// a test send and its event, a dead token (each store's own test checks its tables' counts).
    static let oneReaderRows = 22

    /// `outcome` counts only tables the store names as forgotten, each with rows, `rows` at least.
    static func expectRemoved(_ outcome: ForgetOutcome, atLeast rows: Int, _ store: StoreHarness) throws {
        let tables = try #require(type(of: store.database) as? any ReaderDataTables.Type).forgottenTables
        #expect(Set(outcome.removed.keys).isSubset(of: tables), "\(outcome.removed.keys.sorted()) not all in \(tables.sorted())")
        #expect(outcome.removed.values.allSatisfy { $0 > 0 })
        #expect(outcome.removed.values.reduce(0, +) >= rows)
    }

    static func forgetRemovesTheReaderAndLeavesTheOthersAsTheyWere(_ store: StoreHarness) async throws {
        try await populate(store, ["gone", "stays"])
        let before = try await export(store, "stays")
        let countsBefore = try await store.database.eventCounts(week: "2026-W47")
        let outcome = try await readerData(store).forgetReaders(["gone", "nobody", "gone"], dryRun: false)
        #expect(outcome.readers == 1 && outcome.unknown == ["nobody"])
        try expectRemoved(outcome, atLeast: oneReaderRows, store)
        #expect(try await export(store, "gone") == (false, []))
        // The other reader's data, byte for byte.
        let after = try await export(store, "stays")
        #expect(after.held && after.bytes == before.bytes)
        // The reader is nowhere else either: not a user, no message, no preferences.
        #expect(try await store.withReader { try await $0.user(id: "gone") } == nil)
        #expect(try await store.database.outboxWeeks(userID: "gone") == [])
        #expect(try await (store.database as any PreferenceStore).preferences(of: "gone") == nil)
        let stats = try await store.database.outboxStats(now: t0)
        #expect(stats.total == 5)
        // The week's figures are counted without the reader: their sent message and events are gone alike.
        let countsAfter = try await store.database.eventCounts(week: "2026-W47")
        #expect(countsBefore.map(\.sent).reduce(0, +) == 2 && countsAfter.map(\.sent).reduce(0, +) == 1)
        #expect(countsBefore.map(\.opened).reduce(0, +) == 2 && countsAfter.map(\.opened).reduce(0, +) == 1)
        // Forgetting again: nothing left, the id unknown.
        #expect(try await readerData(store).forgetReaders(["gone"], dryRun: false) == ForgetOutcome(readers: 0, unknown: ["gone"]))
        // The other reader's dead token is theirs: still remembered.
        #expect(try await store.database.reviveToken(Tokens("stays").apns))
    }

    static func aDryRunCountsWhatTheForgetRemovesAndRemovesNothing(_ store: StoreHarness) async throws {
        try await populate(store, ["a", "b", "c"])
        let before = try await export(store, "a")
        let dry = try await readerData(store).forgetReaders(["a", "b", "x"], dryRun: true)
        #expect(dry.readers == 2 && dry.unknown == ["x"])
        try expectRemoved(dry, atLeast: 2 * oneReaderRows, store)
        #expect(try await export(store, "a") == before)
        #expect(try await export(store, "b").held)
        #expect(try await readerData(store).forgetReaders(["a", "b", "x"], dryRun: false) == dry)
        #expect(try await export(store, "c").held)
    }

    /// A sender holds leases of the reader's messages when the forget takes them: its outcomes for
    /// them change nothing (no row, no dead token) and throw nothing; the store takes its other
    /// settlements as usual.
    static func aForgottenLeaseSettlesNothingAndBuriesNoToken(_ store: StoreHarness) async throws {
        let tokens = ["lease-fcm-token-1", "lease-fcm-token-2", "lease-fcm-token-3"]
        _ = try await store.withImporter { importer in
            try await importer.sink.write(
                .users([
                    Reader(
                        id: "leased", locale: "en", timeZone: "UTC", optedOut: false,
                        devices: [Device(token: tokens[0], platform: .android), Device(token: tokens[1], platform: .ios)]),
                    Reader(id: "other", locale: "en", timeZone: "UTC", optedOut: false, devices: [Device(token: tokens[2], platform: .android)]),
                ]), at: imported)
        }
        let messages = [("leased", tokens[0]), ("leased", tokens[1]), ("other", tokens[2])].map { user, token in
            OutboxMessage(
                dedupeKey: OutboxMessage.dedupeKey(week: "2026-W48", userID: user, token: token), week: "2026-W48", userID: user, platform: .android,
                variant: .defaultText, message: Array(#"{"message":{"token":"\#(token)"}}"#.utf8), report: "{}", availableAt: t0)
        }
        try await store.withLedger { ledger in
            let week = try ISOWeek(parsing: "2026-W48")
            _ = try await ledger.begin(week: week, now: t0)
            _ = try await ledger.commit(week: week, through: 0, messages: messages, counters: RunCounters(), now: t0)
        }
        try await store.withConsumer { consumer in
            let leased = try await consumer.lease(owner: "s", limit: 10, now: leasedAt, leaseSeconds: 600, maxAttempts: 5, providers: [.fcm])
            #expect(leased.count == 3)
            let outcome = try await readerData(store).forgetReaders(["leased"], dryRun: false)
            #expect(outcome.removed["digest_outbox"] == 2)
            let first = try #require(leased.first { $0.target == tokens[0] })
            let second = try #require(leased.first { $0.target == tokens[1] })
            let other = try #require(leased.first { $0.target == tokens[2] })
            #expect(try await consumer.extendLeases(ids: leased.map(\.id), owner: "s", until: leasedAt + 1_200) == [other.id])
            let applied = try await consumer.settle(
                [.sent(id: first.id, name: "projects/p/messages/1"), .unregistered(id: second.id, reason: "UNREGISTERED: gone"),
                 .sent(id: other.id, name: "projects/p/messages/2")],
                owner: "s", now: settledAt, maxAttempts: 5)
            #expect(applied == 1)
            // No dead-token entry came back for the forgotten reader's token; no row either.
            #expect(try await store.database.reviveToken(tokens[1]) == false)
            #expect(try await consumer.lease(owner: "s", limit: 10, now: settledAt + 7_200, leaseSeconds: 600, maxAttempts: 5, providers: [.fcm]).isEmpty)
        }
        let stats = try await store.database.outboxStats(now: settledAt)
        #expect(stats.total == 1 && stats.byState == ["sent": 1])
        #expect(try await store.database.outboxWeeks(userID: "leased") == [])
    }

    /// The collector answers `unknown_message` for a forgotten reader's messages and test sends, as
    /// for a pruned one, and records nothing.
    static func theCollectorRejectsEventsOfAForgottenReader(_ store: StoreHarness) async throws {
        try await populate(store, ["gone", "stays"])
        _ = try await readerData(store).forgetReaders(["gone"], dryRun: false)
        let events = [
            AppEvent(messageID: messageIDs("gone").sent, type: .dismissed, at: t0 + 1_000),
            AppEvent(messageID: testSendID("gone"), type: .opened, at: t0 + 1_000),
            AppEvent(messageID: messageIDs("stays").sent, type: .dismissed, at: t0 + 1_000),
        ].enumerated().map { IndexedEvent(index: $0.offset, event: $0.element) }
        let result = try await record(store.database, events, now: t0 + 1_100)
        #expect(result.accepted == 1)
        #expect(result.rejected == [RejectedEvent(index: 0, reason: .unknownMessage), RejectedEvent(index: 1, reason: .unknownMessage)])
        #expect(try await export(store, "gone").held == false)
    }
}

extension StoredJSON: ExpressibleByStringLiteral {
    package init(stringLiteral value: String) { self = .string(value) }
}

extension StoredJSON {
    /// The value of `key` of an object; `nil` for anything else.
    func field(_ key: String) -> StoredJSON? {
        guard case .object(let object) = self else { return nil }
        return object[key]
    }
}
