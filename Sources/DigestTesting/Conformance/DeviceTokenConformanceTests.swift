import DigestCore
import DigestStore
import Foundation
import Testing
import DigestImport

/// Device tokens on both stores: a token FCM called unregistered stays dead through re-imports until
/// the app registers it after its death (or an operator revives it); a token listed under several
/// readers belongs to one; the outbox takes one message per token a week, whoever it was built for.
@Suite struct DeviceTokenConformanceTests {
    func reader(_ id: String, _ devices: [Device]) -> Reader {
        Reader(id: id, locale: "en", timeZone: "UTC", optedOut: false, devices: devices)
    }

    func devices(_ store: StoreHarness, _ ids: [String]) async throws -> [String: (tokens: [String], dead: Int)] {
        try await store.withReader { reader in
            var found: [String: (tokens: [String], dead: Int)] = [:]
            for id in ids {
                guard let user = try await reader.user(id: id)?.reader else { continue }
                found[id] = (user.devices.map(\.token), user.deadTokens)
            }
            return found
        }
    }

    @Test(arguments: Backend.allCases) func aDeadTokenStaysDeadUntilRegisteredAfterItsDeath(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        try await store.outbox(count: 2)  // u1 (tok-1), u2 (tok-2), one message each
        let died: Int64 = 1_000_000
        try await store.withConsumer { consumer in
            let leased = try await consumer.lease(owner: "a", limit: 2, now: died, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm])
            let first = try #require(leased.first { $0.userID == "u1" })
            #expect(try await consumer.settle([.unregistered(id: first.id, reason: "UNREGISTERED: gone")], owner: "a", now: died, maxAttempts: 5) == 1)
        }
        var found = try await devices(store, ["u1", "u2"])
        #expect(found["u1"]?.tokens == [] && found["u1"]?.dead == 1)
        #expect(found["u2"]?.tokens == ["tok-2"] && found["u2"]?.dead == 0)

        // The same users file again, and a registration from before the death: still dead.
        _ = try await store.withImporter { try await $0.sink.write(.users([reader("u1", [Device(token: "tok-1", platform: .android)])])) }
        _ = try await store.withImporter {
            try await $0.sink.write(.users([reader("u1", [Device(token: "tok-1", platform: .android, registeredAt: died - 60)])]))
        }
        found = try await devices(store, ["u1"])
        #expect(found["u1"]?.tokens == [] && found["u1"]?.dead == 1)
        // Registered again after it died: alive.
        _ = try await store.withImporter {
            try await $0.sink.write(.users([reader("u1", [Device(token: "tok-1", platform: .android, registeredAt: died + 60)])]))
        }
        found = try await devices(store, ["u1"])
        #expect(found["u1"]?.tokens == ["tok-1"] && found["u1"]?.dead == 0)

        // Dead again, then revived by hand.
        try await store.withLedger { ledger in
            let week = try ISOWeek(parsing: "2026-W47")
            let message = OutboxMessage(
                dedupeKey: "2026-W47:u1:h", week: "2026-W47", userID: "u1", platform: .android, variant: .defaultText,
                message: Array(#"{"message":{"token":"tok-1"}}"#.utf8), report: "{}", availableAt: 0)
            _ = try await ledger.begin(week: week, now: 0)
            _ = try await ledger.commit(week: week, through: 0, messages: [message], counters: RunCounters(), now: 0)
        }
        try await store.withConsumer { consumer in
            let leased = try await consumer.lease(owner: "a", limit: 5, now: died + 120, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm])
            let message = try #require(leased.first { $0.userID == "u1" })
            _ = try await consumer.settle([.unregistered(id: message.id, reason: "UNREGISTERED: gone")], owner: "a", now: died + 120, maxAttempts: 5)
        }
        #expect(try await devices(store, ["u1"])["u1"]?.dead == 1)
        #expect(try await store.database.reviveToken("tok-1"))
        #expect(try await !store.database.reviveToken("tok-1"))
        #expect(try await devices(store, ["u1"])["u1"]?.tokens == ["tok-1"])
    }

    @Test(arguments: Backend.allCases) func aTokenBelongsToTheLatestRegistrationElseTheLatestLine(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let shared = { (registered: Int64?) in Device(token: "tok-x", platform: .ios, registeredAt: registered) }
        // One batch, three readers, no dates: the last line takes it.
        _ = try await store.withImporter {
            try await $0.sink.write(.users([reader("a", [shared(nil)]), reader("b", [shared(nil)]), reader("c", [shared(nil)])]))
        }
        var found = try await devices(store, ["a", "b", "c"])
        #expect(found["a"]?.tokens == [] && found["b"]?.tokens == [] && found["c"]?.tokens == ["tok-x"])
        // Dates decide over lines: a registered it last, so b's later line does not take it.
        _ = try await store.withImporter { try await $0.sink.write(.users([reader("a", [shared(300)]), reader("b", [shared(200)])])) }
        found = try await devices(store, ["a", "b", "c"])
        #expect(found["a"]?.tokens == ["tok-x"] && found["b"]?.tokens == [] && found["c"]?.tokens == [], "\(found)")
        // In a later import too: c's registration is older than a's, so a keeps it.
        _ = try await store.withImporter { try await $0.sink.write(.users([reader("c", [shared(100)])])) }
        found = try await devices(store, ["a", "c"])
        #expect(found["a"]?.tokens == ["tok-x"] && found["c"]?.tokens == [], "\(found)")
        // A line without a date is the latest line: it takes the token.
        _ = try await store.withImporter { try await $0.sink.write(.users([reader("c", [shared(nil)])])) }
        found = try await devices(store, ["a", "c"])
        #expect(found["a"]?.tokens == [] && found["c"]?.tokens == ["tok-x"], "\(found)")
    }

    func message(_ user: String, token: String = "tok-x", week: String = "2026-W46") -> OutboxMessage {
        OutboxMessage(
            dedupeKey: OutboxMessage.dedupeKey(week: try! ISOWeek(parsing: week), userID: user, token: token), week: week,
            userID: user, platform: .ios, variant: .defaultText, message: Array(#"{"message":{"token":"\#(token)"}}"#.utf8),
            report: "{}", availableAt: 0)
    }

    /// A token that changes reader in the middle of a week (taken by another reader's line, or dropped by
    /// one reader and listed by another in a later import) gets that week's message once, whichever
    /// reader is walked first; a stale batch built before the move (a run reading while the import
    /// wrote) is caught too; the next week it gets its message again.
    @Test(arguments: Backend.allCases) func aTokenThatChangesReaderMidWeekGetsOneMessage(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let w46 = try ISOWeek(parsing: "2026-W46"), w47 = try ISOWeek(parsing: "2026-W47")
        let x = Device(token: "tok-x", platform: .ios), y = Device(token: "tok-y", platform: .ios)
        func commit(_ week: ISOWeek, _ messages: [OutboxMessage]) async throws -> Int {
            try await store.withLedger { ledger in
                _ = try await ledger.begin(week: week, now: 0)
                return try await ledger.commit(week: week, through: 0, messages: messages, counters: RunCounters(), now: 0)
            }
        }
        func users(_ readers: Reader...) async throws {
            _ = try await store.withImporter { try await $0.sink.write(.users(readers)) }
        }
        try await users(reader("a", [x]), reader("e", [y]))
        #expect(try await commit(w46, [message("a"), message("e", token: "tok-y")]) == 2)
        // c's line takes tok-x from a, whose message went out: c gets none this week.
        try await users(reader("c", [x]))
        #expect(try await commit(w46, [message("c")]) == 0)
        // e drops tok-y; a later import lists it under f: f gets none this week.
        try await users(reader("e", []))
        try await users(reader("f", [y]))
        #expect(try await commit(w46, [message("f", token: "tok-y")]) == 0)
        // Next week: one message each, and a batch read before tok-x moved from c to d is caught.
        try await users(reader("d", [x]))
        #expect(try await commit(w47, [message("c", week: "2026-W47")]) == 1)
        #expect(try await commit(w47, [message("d", week: "2026-W47"), message("f", token: "tok-y", week: "2026-W47")]) == 1)
        #expect(try store.sql("SELECT count(*) FROM digest_outbox") == "4")
    }

    /// PostgreSQL reads the adopter's own tables through views, which may list one token under several
    /// readers at once: its outbox takes one message per token a week whatever the batches hold.
    @Test func thePostgresOutboxTakesOneMessagePerTokenAWeek() async throws {
        let store = try await StoreHarness(.postgres)
        let week = try ISOWeek(parsing: "2026-W46")
        let inserted = try await store.withLedger { ledger in
            _ = try await ledger.begin(week: week, now: 0)
            let first = try await ledger.commit(week: week, through: 0, messages: [message("a"), message("b")], counters: RunCounters(), now: 0)
            let later = try await ledger.commit(week: week, through: 0, messages: [message("c")], counters: RunCounters(), now: 0)
            let nextWeek = try await ledger.commit(week: week, through: 0, messages: [message("c", week: "2026-W47")], counters: RunCounters(), now: 0)
            return [first, later, nextWeek]
        }
        #expect(inserted == [1, 0, 1])
        #expect(try store.sql("SELECT count(*) FROM digest_outbox") == "2")
    }
}
