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
                "ALTER TABLE digest_outbox DROP COLUMN due_local", "ALTER TABLE devices DROP COLUMN keys_p256dh",
                "ALTER TABLE devices DROP COLUMN keys_auth", "DROP TABLE digest_test_events", "DROP TABLE digest_test_sends",
                "DROP TABLE digest_preference_changes", "ALTER TABLE users DROP COLUMN pref_every", "ALTER TABLE users DROP COLUMN pref_from",
                "ALTER TABLE users DROP COLUMN pref_paused_until", "ALTER TABLE users DROP COLUMN pref_follow",
                "ALTER TABLE users DROP COLUMN pref_mute", "ALTER TABLE users DROP COLUMN pref_version", "ALTER TABLE users DROP COLUMN pref_fewer", insert,
                "UPDATE digest_schema SET version = 12",
            ] {
                try store.sql(statement)
            }
        case .postgres:
            try store.sql(
                """
                DROP VIEW digest_devices;
                ALTER TABLE digest_import_devices DROP COLUMN provider, DROP COLUMN topic, DROP COLUMN keys_p256dh, DROP COLUMN keys_auth;
                CREATE VIEW digest_devices AS SELECT user_id, token, platform, registered_at, list_position FROM digest_import_devices;
                ALTER TABLE digest_outbox DROP COLUMN provider, DROP COLUMN target, DROP COLUMN headers, DROP COLUMN timing, DROP COLUMN due_local;
                DROP TABLE digest_test_events, digest_test_sends;
                UPDATE digest_schema SET version = 12;
                \(insert);
                """)
        }
        let database: any DigestDatabase =
            switch backend {
            case .sqlite: SQLiteDatabase.sqlite(path: store.directory.path("store.sqlite"))
            case .postgres: try PostgresDatabase.postgres(url: store.url!).runningUntilClosed()
            }
        let migration = try await database.migrate()
        #expect(migration.from == 12 && migration.to == (backend == .sqlite ? SQLiteSchema.latestVersion : PostgresSchema.latestVersion))
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

    // MARK: - Web Push

    /// A subscription's endpoint, the device's token.
    static let endpoint = "https://push.example.net/wpush/v2/gAAAAABk-subscriber-1"
    /// RFC 8291's example subscription keys (a point on P-256 and a 16-byte secret).
    static let keys = Device.SubscriptionKeys(
        p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", auth: "BTBZMqHH6r4Tts7J_aSIgg")

    /// A Web Push row as the composer writes one: the plaintext, the endpoint, the headers JSON.
    func webPushMessage(_ user: String = "u-web", endpoint: String = endpoint, week: String = "2026-W46") -> OutboxMessage {
        OutboxMessage(
            dedupeKey: OutboxMessage.dedupeKey(week: try! ISOWeek(parsing: week), userID: user, token: endpoint), week: week,
            userID: user, platform: .web, variant: .defaultText, message: Array(#"{"title":"T","body":"B","tag":"digest-2026-W46"}"#.utf8),
            report: "{}", availableAt: 7, provider: .webpush, target: endpoint,
            headers: WebPushHeaders(topic: "digest-\(week)", expiresAt: 604_807, p256dh: Self.keys.p256dh, auth: Self.keys.auth).json)
    }

    @Test(arguments: Backend.allCases) func aWebPushDeviceIsStoredAndReadBackWithItsKeys(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let web = Device(endpoint: Self.endpoint, keys: Self.keys, registeredAt: 1_000)
        let fcm = Device(token: "tok-1", platform: .web)
        _ = try await store.withImporter { try await $0.sink.write(.users([reader("u1", [web, fcm])])) }
        var devices = try await store.withReader { try await $0.user(id: "u1")?.reader.devices }
        #expect(devices == [web, fcm])
        #expect(devices?.first?.subscriptionKeys == Self.keys && devices?.last?.subscriptionKeys == nil)
        // The browser made new keys for the same endpoint: the import writes them; the same line again changes nothing.
        let renewed = Device(endpoint: Self.endpoint, keys: .init(p256dh: Self.keys.p256dh, auth: "AAAAAAAAAAAAAAAAAAAAAA"), registeredAt: 1_000)
        let result = try await store.withImporter { try await $0.sink.write(.users([reader("u1", [renewed, fcm])])) }
        #expect(result.written == 1)
        devices = try await store.withReader { try await $0.user(id: "u1")?.reader.devices }
        #expect(devices?.first?.subscriptionKeys?.auth == "AAAAAAAAAAAAAAAAAAAAAA")
        let again = try await store.withImporter { try await $0.sink.write(.users([reader("u1", [renewed, fcm])])) }
        #expect(again.written == 0 && again.unchanged == 1)
    }

    /// Both tables admit `webpush` and still refuse a provider they do not know; a Web Push row is
    /// leased by a sender that names it, counted by provider, and peeked with its target and headers.
    @Test(arguments: Backend.allCases) func aWebPushRowIsEnqueuedLeasedAndCounted(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        #expect(try await commit(store, messages() + [webPushMessage()]) == 3)
        let stats = try await store.database.outboxStats(now: 100)
        #expect(stats.byProvider == ["fcm": 1, "apns": 1, "webpush": 1] && stats.byPlatform == ["android": 1, "ios": 1, "web": 1])
        let rows = try await store.database.peek(limit: 10, state: .ready)
        #expect(rows.map(\.provider) == [.fcm, .apns, .webpush])
        #expect(rows.last?.target == Self.endpoint && rows.last?.headers == webPushMessage().headers)
        try await store.withConsumer { consumer in
            let leased = try await consumer.lease(owner: "w", limit: 10, now: 100, leaseSeconds: 60, maxAttempts: 5, providers: [.webpush])
            let message = try #require(leased.first)
            #expect(leased.count == 1 && message.provider == .webpush && message.target == Self.endpoint)
            #expect(message.message == #"{"title":"T","body":"B","tag":"digest-2026-W46"}"#)
            #expect(try WebPushHeaders(json: Array((message.headers ?? "").utf8)).p256dh == Self.keys.p256dh)
        }
        let now = backend == .sqlite ? "0, 0" : "now(), now()"
        #expect(throws: (any Error).self) {
            try store.sql(
                """
                INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at, created_at, provider, target)
                VALUES ('k', '2026-W46', 'u', 'web', 'Default', '{}', '{}', \(now), 'pigeon', 't')
                """)
        }
        let devices = backend == .sqlite ? "INSERT INTO devices (user_pk, token, platform, provider) VALUES (1, 't', 'web', 'pigeon')"
            : "INSERT INTO digest_import_devices (user_id, token, platform, provider) VALUES ('u1', 't', 'web', 'pigeon')"
        _ = try await store.withImporter { try await $0.sink.write(.users([reader("u1", [])])) }
        #expect(throws: (any Error).self) { try store.sql(devices) }
    }

    /// An endpoint is a token like any other: listed under a second reader it leaves the first (whose
    /// message of the week already went, so the second gets none that week), and once the push
    /// service calls it gone (404 or 410) it is remembered dead by the endpoint itself.
    @Test(arguments: Backend.allCases) func anEndpointHasOneReaderAndIsRememberedDead(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let web = Device(endpoint: Self.endpoint, keys: Self.keys)
        _ = try await store.withImporter { try await $0.sink.write(.users([reader("a", [web])])) }
        #expect(try await commit(store, [webPushMessage("a")]) == 1)
        _ = try await store.withImporter { try await $0.sink.write(.users([reader("b", [web])])) }
        var readers = try await store.withReader { reader in (try await reader.user(id: "a")?.reader, try await reader.user(id: "b")?.reader) }
        #expect(readers.0?.devices == [] && readers.1?.devices == [web])
        #expect(try await commit(store, [webPushMessage("b")]) == 0)
        try await store.withConsumer { consumer in
            let message = try #require(try await consumer.lease(owner: "w", limit: 10, now: 100, leaseSeconds: 60, maxAttempts: 5, providers: [.webpush]).first)
            #expect(message.userID == "a")
            #expect(try await consumer.settle([.unregistered(id: message.id, reason: "GONE: 410")], owner: "w", now: 100, maxAttempts: 5) == 1)
        }
        #expect(try store.sql("SELECT token FROM digest_dead_tokens") == Self.endpoint)
        readers = try await store.withReader { reader in (try await reader.user(id: "a")?.reader, try await reader.user(id: "b")?.reader) }
        #expect(readers.1?.devices == [] && readers.1?.deadTokens == 1)
        // The browser subscribed again (a registration after the death): alive.
        let again = Device(endpoint: Self.endpoint, keys: Self.keys, registeredAt: Int64(Date().timeIntervalSince1970) + 60)
        _ = try await store.withImporter { try await $0.sink.write(.users([reader("b", [again])])) }
        #expect(try await store.withReader { try await $0.user(id: "b")?.reader.devices } == [again])
    }

    /// A SQLite store made at version 14, with rows, migrates to 15 in place: the outbox and devices
    /// tables keep their pages (no rebuild), the file passes `integrity_check`, and the widened checks
    /// take `webpush` and still refuse a provider they do not know.
    @Test func aSQLiteStoreOfVersion14GainsWebPushInPlace() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("old.sqlite")
        do {
            let connection = try SQLiteConnection(path: path)
            #expect(try SQLiteSchema.migrate(connection, through: 14) == (0, 14))
            try connection.execute(
                """
                INSERT INTO users (id, locale, time_zone) VALUES ('u1', 'en', 'UTC');
                INSERT INTO devices (user_pk, token, platform, provider, topic) VALUES (1, '\(Self.apnsToken)', 'ios', 'apns', 'com.example.news');
                INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at, created_at, provider, target)
                VALUES ('2026-W45:u1:h', '2026-W45', 'u1', 'ios', 'Default', '{"aps":{}}', '{}', 0, 0, 'apns', '\(Self.apnsToken)');
                """)
            #expect(throws: SQLiteError.self) {
                try connection.execute("INSERT INTO devices (user_pk, token, platform, provider) VALUES (1, 'e', 'web', 'webpush')")
            }
        }
        let pages = "SELECT name, rootpage FROM sqlite_schema WHERE type = 'table' AND name IN ('devices', 'digest_outbox') ORDER BY name"
        let before = try SQLiteConnection(path: path).lines(pages)
        let migration = try await SQLiteDatabase.sqlite(path: path).migrate()
        #expect(migration.from == 14 && migration.to == SQLiteSchema.latestVersion)
        let connection = try SQLiteConnection(path: path)
        #expect(try connection.lines(pages) == before)
        #expect(try connection.lines("PRAGMA integrity_check") == "ok")
        #expect(try connection.lines("SELECT count(*) FROM sqlite_schema WHERE sql LIKE '%''webpush''%'") == "2")
        try connection.execute(
            """
            INSERT INTO devices (user_pk, token, platform, provider, keys_p256dh, keys_auth)
            VALUES (1, '\(Self.endpoint)', 'web', 'webpush', '\(Self.keys.p256dh)', '\(Self.keys.auth)');
            INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at, created_at, provider, target)
            VALUES ('2026-W46:u1:h', '2026-W46', 'u1', 'web', 'Default', '{"title":"T"}', '{}', 0, 0, 'webpush', '\(Self.endpoint)');
            """)
        #expect(throws: SQLiteError.self) {
            try connection.execute("INSERT INTO devices (user_pk, token, platform, provider) VALUES (1, 'x', 'web', 'pigeon')")
        }
        #expect(throws: SQLiteError.self) {
            try connection.execute(
                """
                INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at, created_at, provider)
                VALUES ('2026-W46:u1:x', '2026-W46', 'u1', 'web', 'Default', '{}', '{}', 0, 0, 'pigeon')
                """)
        }
        let store = SQLiteDatabase.sqlite(path: path)
        #expect(try await store.peek(limit: 10, state: nil).map(\.provider) == [.apns, .webpush])
        let devices = try await store.withHistoryReader { try await $0.user(id: "u1")?.reader.devices }
        #expect(Set(devices ?? []) == [
            Device(token: Self.apnsToken, platform: .ios, topic: "com.example.news", provider: .apns), Device(endpoint: Self.endpoint, keys: Self.keys),
        ])
    }

    /// A PostgreSQL store of version 14 (its checks narrow, its devices without keys) migrates: the
    /// checks take `webpush`, refuse an unknown provider, and the view gains the keys; an adopter's
    /// view without them still reads, its Web Push devices without keys.
    @Test func aPostgresStoreOfVersion14GainsWebPush() async throws {
        let store = try await StoreHarness(.postgres)
        try store.sql(
            """
            DROP VIEW digest_devices;
            ALTER TABLE digest_import_devices DROP COLUMN keys_p256dh, DROP COLUMN keys_auth,
                DROP CONSTRAINT digest_import_devices_provider_check,
                ADD CONSTRAINT digest_import_devices_provider_check CHECK (provider IN ('fcm', 'apns'));
            ALTER TABLE digest_outbox DROP CONSTRAINT digest_outbox_provider_check,
                ADD CONSTRAINT digest_outbox_provider_check CHECK (provider IN ('fcm', 'apns'));
            CREATE VIEW digest_devices AS
                SELECT user_id, token, platform, registered_at, list_position, provider, topic FROM digest_import_devices;
            DROP TABLE digest_test_events, digest_test_sends;
            UPDATE digest_schema SET version = 14;
            INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at, created_at, provider, target)
            VALUES ('2026-W45:u1:h', '2026-W45', 'u1', 'ios', 'Default', '{"aps":{}}', '{}', now(), now(), 'apns', '\(Self.apnsToken)');
            """)
        let database = try PostgresDatabase.postgres(url: store.url!).runningUntilClosed()
        let migration = try await database.migrate()
        #expect(migration.from == 14 && migration.to == PostgresSchema.latestVersion)
        #expect(try await commit(store, [webPushMessage()]) == 1)
        #expect(try await database.peek(limit: 10, state: nil).map(\.provider) == [.apns, .webpush])
        #expect(throws: (any Error).self) {
            try store.sql("UPDATE digest_outbox SET provider = 'pigeon' WHERE user_id = 'u-web'")
        }
        let web = Device(endpoint: Self.endpoint, keys: Self.keys)
        _ = try await store.withImporter { try await $0.sink.write(.users([reader("u-web", [web])])) }
        #expect(try await store.withReader { try await $0.user(id: "u-web")?.reader.devices } == [web])
        try store.sql(
            """
            DROP VIEW digest_devices;
            CREATE VIEW digest_devices AS
                SELECT user_id, token, platform, registered_at, list_position, provider, topic FROM digest_import_devices;
            """)
        let adopted = try PostgresDatabase.postgres(url: store.url!).runningUntilClosed()
        let devices = try await adopted.withHistoryReader { try await $0.user(id: "u-web")?.reader.devices }
        #expect(devices == [Device(token: Self.endpoint, platform: .web, provider: .webpush)])
    }
}
