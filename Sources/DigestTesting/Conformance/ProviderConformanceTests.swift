import DigestCore
import DigestImport
import DigestPostgres
import DigestSQLite
import DigestStore
import Foundation
import Testing

/// Devices and outbox rows name their provider, on both stores (docs/001, docs/003): an APNs device
/// keeps its provider and topic; a row keeps its provider, target and headers; a sender leases only
/// the providers it can send; the dead-device memory reads the row's target; the migration fills the
/// target of the rows from before.
@Suite struct ProviderConformanceTests {
    static let apnsToken = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
    static let headers = #"{"apns-push-type":"alert","apns-priority":"5"}"#
    static let week = try! ISOWeek(parsing: "2026-W46")

    func reader(_ id: String, _ devices: [Device]) -> Reader {
        Reader(id: id, locale: "en", timeZone: "UTC", optedOut: false, devices: devices)
    }

    /// An FCM message to `tok-<user>` and an APNs one to ``apnsToken`` (a payload with no token in it).
    func messages() -> [OutboxMessage] {
        [
            OutboxMessage(
                dedupeKey: OutboxMessage.dedupeKey(week: Self.week, userID: "u-fcm", token: "tok-u-fcm"), week: "2026-W46",
                userID: "u-fcm", platform: .android, variant: .defaultText,
                message: Array(#"{"message":{"token":"tok-u-fcm"}}"#.utf8), report: "{}", availableAt: 10),
            OutboxMessage(
                dedupeKey: OutboxMessage.dedupeKey(week: Self.week, userID: "u-apns", token: Self.apnsToken), week: "2026-W46",
                userID: "u-apns", platform: .ios, variant: .defaultText,
                message: Array(#"{"aps":{"alert":{"title":"T","body":"B"},"mutable-content":1}}"#.utf8), report: "{}",
                availableAt: 5, provider: .apns, target: Self.apnsToken, headers: Self.headers),
        ]
    }

    func commit(_ store: StoreHarness, _ messages: [OutboxMessage]) async throws -> Int {
        try await store.withLedger { ledger in
            _ = try await ledger.begin(week: Self.week, now: 0)
            return try await ledger.commit(week: Self.week, through: 0, messages: messages, counters: RunCounters(), now: 0)
        }
    }

    @Test(arguments: Backend.allCases) func anAPNsDeviceIsStoredAndReadBackWithItsProviderAndTopic(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let apns = Device(token: Self.apnsToken, platform: .ios, topic: "com.example.news", provider: .apns)
        let fcm = Device(token: "tok-1", platform: .android)
        _ = try await store.withImporter { try await $0.sink.write(.users([reader("u1", [apns, fcm])])) }
        var devices = try await store.withReader { try await $0.user(id: "u1")?.reader.devices }
        #expect(Set(devices ?? []) == [apns, fcm])
        // A new import that changes only the topic and then the provider writes them.
        let moved = Device(token: Self.apnsToken, platform: .ios, topic: "com.example.other", provider: .apns)
        let result = try await store.withImporter { try await $0.sink.write(.users([reader("u1", [moved, fcm])])) }
        #expect(result.written == 1)
        devices = try await store.withReader { try await $0.user(id: "u1")?.reader.devices }
        #expect(Set(devices ?? []) == [moved, fcm])
        let again = try await store.withImporter { try await $0.sink.write(.users([reader("u1", [moved, fcm])])) }
        #expect(again.written == 0 && again.unchanged == 1)
    }

    /// An adopter's `digest_devices` view from before providers reads as FCM devices without topics.
    @Test func aPostgresDevicesViewWithoutProviderColumnsReadsAsFCM() async throws {
        let store = try await StoreHarness(.postgres)
        let apns = Device(token: Self.apnsToken, platform: .ios, topic: "com.example.news", provider: .apns)
        _ = try await store.withImporter { try await $0.sink.write(.users([reader("u1", [apns])])) }
        try store.sql(
            """
            DROP VIEW digest_devices;
            CREATE VIEW digest_devices AS SELECT user_id, token, platform, registered_at, list_position FROM digest_import_devices;
            """)
        let devices = try await store.withReader { try await $0.user(id: "u1")?.reader.devices }
        #expect(devices == [Device(token: Self.apnsToken, platform: .ios, provider: .fcm)])
    }

    @Test(arguments: Backend.allCases) func aSenderLeasesOnlyTheProvidersItCanSend(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        #expect(try await commit(store, messages()) == 2)
        try await store.withConsumer { consumer in
            // The APNs message is due first, but an FCM sender never sees it.
            let fcm = try await consumer.lease(owner: "fcm", limit: 10, now: 100, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm])
            #expect(fcm.map(\.userID) == ["u-fcm"])
            #expect(fcm.first?.provider == .fcm && fcm.first?.target == "tok-u-fcm" && fcm.first?.headers == nil)
            #expect(try await consumer.lease(owner: "fcm", limit: 10, now: 100, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm]).isEmpty)
            #expect(try await consumer.lease(owner: "none", limit: 10, now: 100, leaseSeconds: 60, maxAttempts: 5, providers: []).isEmpty)
            let apns = try await consumer.lease(
                owner: "apns", limit: 10, now: 100, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm, .apns])
            let message = try #require(apns.first)
            #expect(apns.count == 1 && message.userID == "u-apns" && message.provider == .apns && message.attempts == 1)
            #expect(message.target == Self.apnsToken && message.headers == Self.headers)
            #expect(message.message == #"{"aps":{"alert":{"title":"T","body":"B"},"mutable-content":1}}"#)
        }
        #expect(try store.sql("SELECT user_id, state, lease_owner FROM digest_outbox ORDER BY user_id") == "u-apns|leased|apns\nu-fcm|leased|fcm")
    }

    @Test(arguments: Backend.allCases) func anUnregisteredAPNsDeviceIsRememberedByItsTarget(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let apns = Device(token: Self.apnsToken, platform: .ios, provider: .apns)
        _ = try await store.withImporter {
            try await $0.sink.write(.users([reader("u-apns", [apns]), reader("u-fcm", [Device(token: "tok-u-fcm", platform: .android)])]))
        }
        #expect(try await commit(store, messages()) == 2)
        try await store.withConsumer { consumer in
            let leased = try await consumer.lease(owner: "a", limit: 10, now: 100, leaseSeconds: 60, maxAttempts: 5, providers: [.apns])
            let message = try #require(leased.first)
            #expect(try await consumer.settle([.unregistered(id: message.id, reason: "Unregistered")], owner: "a", now: 100, maxAttempts: 5) == 1)
        }
        #expect(try store.sql("SELECT token, reason FROM digest_dead_tokens") == "\(Self.apnsToken)|Unregistered")
        let readers = try await store.withReader { reader in
            (try await reader.user(id: "u-apns")?.reader, try await reader.user(id: "u-fcm")?.reader)
        }
        #expect(readers.0?.devices == [] && readers.0?.deadTokens == 1)
        #expect(readers.1?.devices.map(\.token) == ["tok-u-fcm"] && readers.1?.deadTokens == 0)
    }

    /// A sender that cannot send APNs drains without waiting for APNs messages: its backlog and its
    /// dry run's peek count and read only its providers'.
    @Test(arguments: Backend.allCases) func backlogAndPeekCountOnlyTheSendersProviders(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        #expect(try await commit(store, messages()) == 2)
        try await store.withConsumer { consumer in
            #expect(try await consumer.backlog(now: 100) == OutboxBacklog(due: 2))
            #expect(try await consumer.backlog(now: 100, providers: [.fcm]) == OutboxBacklog(due: 1))
            #expect(try await consumer.backlog(now: 7, providers: [.fcm]) == OutboxBacklog(waiting: 1, nextDue: 10))
            #expect(try await consumer.backlog(now: 7, providers: [.apns]) == OutboxBacklog(due: 1))
            #expect(try await consumer.backlog(now: 100, providers: []) == OutboxBacklog())
            #expect(try await consumer.peekDue(afterID: 0, limit: 10, now: 100, providers: [.apns]).map(\.userID) == ["u-apns"])
            #expect(try await consumer.peekDue(afterID: 0, limit: 10, now: 100, providers: [.fcm]).map(\.userID) == ["u-fcm"])
            #expect(try await consumer.peekDue(afterID: 0, limit: 10, now: 100).count == 2)
            _ = try await consumer.lease(owner: "a", limit: 10, now: 100, leaseSeconds: 60, maxAttempts: 5, providers: [.apns])
            #expect(try await consumer.backlog(now: 100, providers: [.apns]) == OutboxBacklog(leased: 1))
            #expect(try await consumer.backlog(now: 100, providers: [.fcm]) == OutboxBacklog(due: 1))
        }
    }

    /// APNs says since when a token is invalid: the device is dead from then, so a registration after
    /// that time (and before the answer came) keeps it alive.
    @Test(arguments: Backend.allCases) func aDeviceRegisteredAfterItsTokenDiedStaysAlive(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let apns = Device(token: Self.apnsToken, platform: .ios, registeredAt: 50, provider: .apns)
        _ = try await store.withImporter { try await $0.sink.write(.users([reader("u-apns", [apns])])) }
        #expect(try await commit(store, messages()) == 2)
        try await store.withConsumer { consumer in
            let message = try #require(try await consumer.lease(owner: "a", limit: 10, now: 100, leaseSeconds: 60, maxAttempts: 5, providers: [.apns]).first)
            let settled = try await consumer.settle([.unregistered(id: message.id, reason: "Unregistered", diedAt: 40)], owner: "a", now: 100, maxAttempts: 5)
            #expect(settled == 1)
        }
        #expect(try store.sql("SELECT state, last_error FROM digest_outbox WHERE user_id = 'u-apns'") == "dead|Unregistered")
        var read = try await store.withReader { try await $0.user(id: "u-apns")?.reader }
        #expect(read?.devices.map(\.token) == [Self.apnsToken] && read?.deadTokens == 0)
        // Dead since after its registration: left out.
        try await store.withConsumer { consumer in
            _ = try await consumer.requeueDead(reasonPrefix: nil, week: nil, now: 100)
            let message = try #require(try await consumer.lease(owner: "a", limit: 10, now: 100, leaseSeconds: 60, maxAttempts: 5, providers: [.apns]).first)
            _ = try await consumer.settle([.unregistered(id: message.id, reason: "Unregistered", diedAt: 60)], owner: "a", now: 100, maxAttempts: 5)
        }
        read = try await store.withReader { try await $0.user(id: "u-apns")?.reader }
        #expect(read?.devices == [] && read?.deadTokens == 1)
    }

    @Test(arguments: Backend.allCases) func statsAndPeekNameTheProvider(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        #expect(try await commit(store, messages()) == 2)
        let stats = try await store.database.outboxStats(now: 100)
        #expect(stats.byProvider == ["fcm": 1, "apns": 1] && stats.total == 2 && stats.byPlatform == ["android": 1, "ios": 1])
        let rows = try await store.database.peek(limit: 10, state: .ready)
        #expect(rows.map(\.provider) == [.fcm, .apns])
        #expect(rows.map(\.target) == ["tok-u-fcm", Self.apnsToken])
        #expect(rows.map(\.headers) == [nil, Self.headers])
    }

    /// A store at version 12 with a message enqueued then: the migration names it FCM and fills its
    /// target from the FCM body (an empty target when the body names no token), and keeps its message.
    @Test(arguments: Backend.allCases) func theMigrationFillsTheTargetOfEarlierRows(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let before = #"{"message":{"token":"t-before","data":{"a":"1"}}}"#
        let insert = """
            INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at, created_at) VALUES
            ('2026-W45:u1:h', '2026-W45', 'u1', 'android', 'Default', '\(before)', '{}', \(backend == .sqlite ? "0, 0" : "now(), now()")),
            ('2026-W45:u2:h', '2026-W45', 'u2', 'android', 'Default', '{"message":{"topic":"x"}}', '{}', \(backend == .sqlite ? "0, 0" : "now(), now()"))
            """
        switch backend {
        case .sqlite:
            // One statement a connection, each of which migrates a store it finds old: the version last.
            for statement in [
                "ALTER TABLE devices DROP COLUMN provider", "ALTER TABLE devices DROP COLUMN topic",
                "ALTER TABLE digest_outbox DROP COLUMN provider", "ALTER TABLE digest_outbox DROP COLUMN target",
                "ALTER TABLE digest_outbox DROP COLUMN headers", "ALTER TABLE digest_outbox DROP COLUMN timing",
                "ALTER TABLE digest_outbox DROP COLUMN due_local", insert, "UPDATE digest_schema SET version = 12",
            ] {
                try store.sql(statement)
            }
        case .postgres:
            try store.sql(
                """
                DROP VIEW digest_devices;
                ALTER TABLE digest_import_devices DROP COLUMN provider, DROP COLUMN topic;
                CREATE VIEW digest_devices AS SELECT user_id, token, platform, registered_at, list_position FROM digest_import_devices;
                ALTER TABLE digest_outbox DROP COLUMN provider, DROP COLUMN target, DROP COLUMN headers, DROP COLUMN timing, DROP COLUMN due_local;
                UPDATE digest_schema SET version = 12;
                \(insert);
                """)
        }
        let database: any DigestDatabase =
            switch backend {
            case .sqlite: SQLiteDatabase.sqlite(path: store.directory.path("store.sqlite"))
            case .postgres: try PostgresDatabase.postgres(url: store.url!)
            }
        let migration = try await database.migrate()
        #expect(migration.from == 12 && migration.to == 14)
        let rows = try await database.peek(limit: 10, state: nil)
        #expect(rows.map(\.provider) == [.fcm, .fcm])
        #expect(rows.map(\.target) == ["t-before", ""])
        #expect(rows.map(\.headers) == [nil, nil])
        // Migration 14: rows from before have no timing and no local due time.
        #expect(rows.map(\.timing) == [nil, nil] && rows.map(\.dueLocal) == [nil, nil])
        #expect(rows.first?.message.contains("t-before") == true)
        // The view is ours again: it gains the columns, and an APNs device goes in and comes back.
        let apns = Device(token: Self.apnsToken, platform: .ios, topic: "com.example.news", provider: .apns)
        _ = try await store.withImporter { try await $0.sink.write(.users([reader("u3", [apns])])) }
        #expect(try await store.withReader { try await $0.user(id: "u3")?.reader.devices } == [apns])
    }
}
