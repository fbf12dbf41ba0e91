import AsyncHTTPClient
import Crypto
import DigestCore
import DigestFakes
import DigestPostgres
import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Logging
import NIOCore
import NIOSSL
import Synchronization
import Testing

@testable import DigestSender

/// The APNs sender in process against the fake APNs server on loopback over TLS (HTTP/2), on both
/// stores: every answer's outcome, the wrong-environment guard, the provider token's renewal, GOAWAY
/// and dropped connections.
@Suite struct APNsSenderTests {
    /// A store of the test's backend, and SQL on it.
    struct Outbox {
        let backend: TestStore
        let db: String

        init(_ backend: TestStore, in dir: TemporaryDirectory) async throws {
            self.backend = backend
            db = try await backend.make(in: dir, name: "apns")
        }

        /// The first column of the first row, as text.
        func scalar(_ sql: String) throws -> String {
            switch backend {
            case .sqlite: try OutboxFixture.scalar(path: db, sql) ?? ""
            case .postgres: try PostgresCluster.shared().sql(sql, url: db)
            }
        }

        func count(_ state: String) throws -> Int { Int(try scalar("SELECT count(*) FROM digest_outbox WHERE state = '\(state)'")) ?? -1 }

        var deadTokens: Int { get throws { Int(try scalar("SELECT count(*) FROM digest_dead_tokens")) ?? -1 } }

        /// Runs `sqlite` or `postgres` with this store.
        func run<T>(
            _ sqlite: (SQLiteDatabase) async throws -> T, _ postgres: (PostgresDatabase) async throws -> T
        ) async throws -> T {
            switch backend {
            case .sqlite: try await sqlite(SQLiteDatabase.sqlite(path: db))
            case .postgres: try await postgres(try PostgresDatabase.postgres(url: db).runningUntilClosed())
            }
        }
    }

    static let topic = "com.example.digest"
    static let otherTopic = "com.example.other"

    /// A 64-digit hex device token.
    static func token(_ i: Int) -> String {
        let hex = String(i, radix: 16)
        return "d" + String(repeating: "0", count: 63 - hex.count) + hex
    }

    /// APNs rows `1...count` for users `u<i>` (through the run's ledger); `topic` names a row's own
    /// topic, `payloadBytes` pads a payload to a size.
    static func fill(
        _ database: some DigestDatabase, count: Int, week: String = "2026-W46", topic: (Int) -> String? = { _ in nil },
        payloadBytes: (Int) -> Int? = { _ in nil }
    ) async throws {
        let isoWeek = try ISOWeek(parsing: week)
        try await database.withLedger { ledger in
            _ = try await ledger.begin(week: isoWeek, now: 0)
            let messages = (1...count).map { i in
                let dedupeKey = "\(week):u\(i):\(token(i))"
                let messageID = OutboxMessage.messageID(dedupeKey: dedupeKey)
                let headers = APNsHeaders(priority: 5, expiration: 1_900_000_000, collapseID: "digest-\(week)", id: APNsHeaders.id(messageID: messageID), topic: topic(i))
                var payload = #"{"aps":{"alert":{"title":"Your week","body":"3 articles"},"mutable-content":1},"message_id":"\#(messageID)""#
                if let size = payloadBytes(i) { payload += #","pad":""# + String(repeating: "x", count: max(0, size - payload.utf8.count - 10)) + #"""# }
                payload += "}"
                return OutboxMessage(
                    dedupeKey: dedupeKey, week: week, userID: "u\(i)", platform: .ios, variant: .defaultText, message: Array(payload.utf8), report: "{}",
                    availableAt: 0, messageID: messageID, provider: .apns, target: token(i), headers: headers.json)
            }
            _ = try await ledger.commit(week: isoWeek, through: 0, messages: messages, counters: RunCounters(), now: 0)
        }
    }

    /// An APNs sender against `server` on `database`, time shrunk so retries take milliseconds.
    static func withSender<Database: DigestPipelineStore, T>(
        _ database: Database, server: FakeAPNsServer, key: APNsSigningKey? = nil, topic: String = topic,
        configure: (inout PushSender<Database>.Configuration) -> Void = { _ in },
        _ body: (PushSender<Database>) async throws -> T
    ) async throws -> T {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(server.certificatePath)]
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.tlsConfiguration = tls
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        var apns = APNsTransport.Configuration()
        apns.endpoint = server.url
        apns.topic = topic
        apns.connections = 2
        var configuration = PushSender<Database>.Configuration()
        configuration.concurrency = 16
        configuration.drain = true
        configuration.retry.timeScale = 0.001
        configuration.pollInterval = .milliseconds(50)
        configuration.owner = "test-\(UUID().uuidString.prefix(8))"
        configuration.caFile = server.certificatePath
        // A connect that times out counts an attempt: in a full suite on two cores a TLS handshake has
        // taken longer than the default 5 s, and the refusal tests count that nothing was tried.
        configuration.connectTimeout = .seconds(60)
        configure(&configuration)
        var logger = Logger(label: "test.apns")
        logger.logLevel = .warning
        do {
            let key = try key ?? APNsSigningKey(pem: server.keyPEM, keyID: server.keyID, teamID: server.teamID)
            let sender = try PushSender(database: database, apns: apns, key: key, client: client, configuration: configuration, logger: logger)
            let result = try await body(sender)
            try? await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    static func send(_ outbox: Outbox, _ server: FakeAPNsServer, key: APNsSigningKey? = nil, topic: String = topic,
                     configure: @escaping (inout PushSender<SQLiteDatabase>.Configuration) -> Void = { _ in },
                     postgres: @escaping (inout PushSender<PostgresDatabase>.Configuration) -> Void = { _ in }) async throws -> SendSummary {
        try await outbox.run { database in
            try await withSender(database, server: server, key: key, topic: topic, configure: configure) { try await $0.send() }
        } _: { database in
            try await withSender(database, server: server, key: key, topic: topic, configure: postgres) { try await $0.send() }
        }
    }

    /// Every one of the `count` messages back in the outbox untried: ready, no attempt counted (the
    /// failure says which rows are not, and the last error recorded).
    static func expectReleasedUntried(_ outbox: Outbox, _ count: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let ready = try outbox.count("ready"), attempts = try outbox.scalar("SELECT sum(attempts) FROM digest_outbox")
        let states = try ["leased", "sent", "dead"].map { "\($0) \(try outbox.count($0))" }.joined(separator: ", ")
        let error = try outbox.scalar("SELECT max(last_error) FROM digest_outbox")
        #expect(ready == count && attempts == "0", "ready \(ready), \(states), attempts \(attempts), last error: \(error)", sourceLocation: sourceLocation)
    }

    static func fill(_ outbox: Outbox, count: Int, topic: @escaping (Int) -> String? = { _ in nil }, payloadBytes: @escaping (Int) -> Int? = { _ in nil }) async throws {
        try await outbox.run { try await fill($0, count: count, topic: topic, payloadBytes: payloadBytes) } _: {
            try await fill($0, count: count, topic: topic, payloadBytes: payloadBytes)
        }
    }

    // MARK: Outcomes

    @Test(arguments: TestStore.allCases)
    func everyMessageIsSentOnceWithItsHeadersAndBadDeviceTokensAreDead(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let outbox = try await Outbox(backend, in: dir)
        try await Self.fill(outbox, count: 120) { $0 <= 10 ? Self.otherTopic : nil }
        var faults = FakeAPNsServer.Faults()
        faults.badDeviceTokens = [Self.token(7), Self.token(50), Self.token(90)]
        faults.minDelayMilliseconds = 5
        faults.maxDelayMilliseconds = 10
        let server = try await FakeAPNsServer.start(topics: [Self.topic, Self.otherTopic], faults: faults, maxConcurrentStreams: 8)
        let summary = try await Self.send(outbox, server)
        let stats = server.stats
        #expect(summary.sent == 117 && summary.dead == ["BadDeviceToken": 3] && summary.devicesRemoved == 3, "\(summary)")
        #expect(try outbox.count("sent") == 117 && outbox.count("dead") == 3 && outbox.deadTokens == 3)
        #expect(stats.delivered == 117 && stats.duplicates == 0 && stats.providerTokens == 1, "\(stats)")
        #expect(stats.maxStreamsUsed <= 8 && stats.refusedStreams == 0, "\(stats)")
        // The row's own topic, else the sender's; the receipt is the apns-id.
        #expect(server.deliveries(token: Self.token(3))?.headers["apns-topic"] == Self.otherTopic)
        let delivery = try #require(server.deliveries(token: Self.token(20)))
        #expect(delivery.headers["apns-topic"] == Self.topic && delivery.headers["apns-push-type"] == "alert")
        let receipt = try outbox.scalar("SELECT fcm_name FROM digest_outbox WHERE target = '\(Self.token(20))'")
        #expect(!receipt.isEmpty && receipt == delivery.headers["apns-id"])
        #expect(try outbox.scalar("SELECT last_error FROM digest_outbox WHERE target = '\(Self.token(50))'").hasPrefix("BadDeviceToken: "))
        try await server.shutdown()
    }

    @Test(arguments: TestStore.allCases)
    func twentyBadDeviceTokensFirstExit78AndKillNothing(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let outbox = try await Outbox(backend, in: dir)
        try await Self.fill(outbox, count: 60)
        var faults = FakeAPNsServer.Faults()
        faults.wrongEnvironment = true
        let server = try await FakeAPNsServer.start(faults: faults)
        await #expect {
            _ = try await Self.send(outbox, server)
        } throws: { error in
            (error as? SenderError)?.code == .configuration && "\(error)".contains("other APNs environment")
        }
        #expect(try outbox.count("ready") == 60 && outbox.deadTokens == 0)
        #expect(try outbox.scalar("SELECT sum(attempts) FROM digest_outbox") == "0")
        #expect(server.stats.answers["400 BadDeviceToken", default: 0] >= 20)
        try await server.shutdown()
    }

    /// A 410's timestamp is when the token died: a device the app registered after it stays alive for
    /// the next run, one registered before it is dead.
    @Test(arguments: TestStore.allCases)
    func unregisteredKillsTheDeviceSinceItsTimestampOnly(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let outbox = try await Outbox(backend, in: dir)
        let died = Timestamp.parse("2026-11-01T00:00:00Z")!
        let users = try dir.write("users.jsonl", lines: [
            #"{"id":"u1","locale":"en","timeZone":"UTC","devices":[{"token":"\#(Self.token(1))","provider":"apns","registeredAt":"2026-10-01T00:00:00Z"}]}"#,
            #"{"id":"u2","locale":"en","timeZone":"UTC","devices":[{"token":"\#(Self.token(2))","provider":"apns","registeredAt":"2026-11-01T01:00:00Z"}]}"#,
            #"{"id":"u3","locale":"en","timeZone":"UTC","devices":[{"token":"\#(Self.token(3))","provider":"apns"}]}"#,
        ])
        let imported = try await DigestBinary.run(["import", "--db", outbox.db, users])
        #expect(imported.status == 0, "\(imported.stderr)")
        try await Self.fill(outbox, count: 3)
        var faults = FakeAPNsServer.Faults()
        faults.unregistered = [Self.token(1): died * 1000 + 250, Self.token(2): died * 1000 + 250]
        let server = try await FakeAPNsServer.start(faults: faults)
        let summary = try await Self.send(outbox, server)
        #expect(summary.sent == 1 && summary.dead == ["Unregistered": 2] && summary.devicesRemoved == 2, "\(summary)")
        #expect(try outbox.deadTokens == 2)
        let readers = try await outbox.run { database in
            try await database.withHistoryReader { history in [try await history.user(id: "u1"), try await history.user(id: "u2")] }
        } _: { database in
            try await database.withHistoryReader { history in [try await history.user(id: "u1"), try await history.user(id: "u2")] }
        }
        #expect(readers[0]?.reader.deadTokens == 1 && readers[0]?.reader.devices.isEmpty == true)
        #expect(readers[1]?.reader.deadTokens == 0 && readers[1]?.reader.devices.map(\.token) == [Self.token(2)])
        try await server.shutdown()
    }

    /// A provider token APNs calls expired at once means the clocks disagree: exit 78, nothing sent.
    @Test(arguments: TestStore.allCases)
    func expiredProviderTokenOnAYoungTokenExits78NamingTheClock(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let outbox = try await Outbox(backend, in: dir)
        try await Self.fill(outbox, count: 10)
        let server = try await FakeAPNsServer.start(clock: { FakeAPNsServer.wallClock() + 2 * 3600 })
        await #expect {
            _ = try await Self.send(outbox, server)
        } throws: { error in
            (error as? SenderError)?.code == .configuration && "\(error)".contains("clock")
        }
        try Self.expectReleasedUntried(outbox, 10)
        try await server.shutdown()
    }

    /// A token at least 20 minutes old that APNs calls expired is renewed, and the message goes.
    @Test(arguments: TestStore.allCases)
    func expiredProviderTokenOnAnOldTokenRenewsIt(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let outbox = try await Outbox(backend, in: dir)
        try await Self.fill(outbox, count: 40)
        let base = FakeAPNsServer.wallClock()
        let senderOffset = Atomic<Int64>(0)
        let serverOffset = Atomic<Int64>(0)
        let server = try await FakeAPNsServer.start(clock: { base + serverOffset.load(ordering: .relaxed) })
        // After the first 20 answers: the sender's token is 30 minutes old, the server's clock 70.
        let later = Watcher.start(when: { server.stats.answers["200", default: 0] >= 20 }) {
            senderOffset.store(30 * 60, ordering: .relaxed)
            serverOffset.store(70 * 60, ordering: .relaxed)
        }
        let clock: @Sendable () -> Int64 = { base + senderOffset.load(ordering: .relaxed) }
        let summary = try await Self.send(outbox, server) {
            $0.clock = clock
            $0.concurrency = 1
        } postgres: {
            $0.clock = clock
            $0.concurrency = 1
        }
        later.cancel()
        #expect(later.fired && summary.sent == 40 && server.stats.delivered == 40, "\(summary)")
        #expect(server.stats.providerTokens == 2 && server.stats.answers["403 ExpiredProviderToken", default: 0] == 1, "\(server.stats)")
        try await server.shutdown()
    }

    enum Refusal: String, CaseIterable, Sendable {
        case invalidProviderToken = "InvalidProviderToken", badTopic = "BadTopic", topicDisallowed = "TopicDisallowed"
    }

    @Test(arguments: TestStore.allCases, Refusal.allCases)
    func refusalsOfTheKeyOrTopicExit78AndReleaseEverything(backend: TestStore, refusal: Refusal) async throws {
        let dir = try TemporaryDirectory()
        let outbox = try await Outbox(backend, in: dir)
        try await Self.fill(outbox, count: 30)
        let server = try await FakeAPNsServer.start()
        var key: APNsSigningKey?
        var topic = Self.topic
        switch refusal {
        case .invalidProviderToken:
            key = try APNsSigningKey(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: server.keyID, teamID: server.teamID)
        case .badTopic: topic = "com.example bad"
        case .topicDisallowed: topic = "com.example.unknown"
        }
        await #expect {
            _ = try await Self.send(outbox, server, key: key, topic: topic)
        } throws: { error in
            let code = (error as? SenderError)?.code
            return (code == .authentication || code == .configuration) && "\(error)".contains(refusal.rawValue)
        }
        try Self.expectReleasedUntried(outbox, 30)
        #expect(server.stats.delivered == 0)
        try await server.shutdown()
    }

    @Test(arguments: TestStore.allCases)
    func busyAnswersAreRetriedAndPayloadTooLargeIsDead(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let outbox = try await Outbox(backend, in: dir)
        try await Self.fill(outbox, count: 150, payloadBytes: { $0 % 50 == 0 ? 5000 : nil })
        var faults = FakeAPNsServer.Faults()
        faults.tooManyRequestsRate = 0.15
        faults.internalRate = 0.1
        faults.unavailableRate = 0.15
        let server = try await FakeAPNsServer.start(faults: faults)
        let summary = try await Self.send(outbox, server) { $0.maxAttempts = 40 } postgres: { $0.maxAttempts = 40 }
        let stats = server.stats
        #expect(summary.sent == 147 && summary.dead == ["PayloadTooLarge": 3] && summary.devicesRemoved == 0, "\(summary)")
        #expect(summary.retried["TooManyRequests", default: 0] > 0 && summary.retried["InternalServerError", default: 0] > 0
            && summary.retried["ServiceUnavailable", default: 0] > 0, "\(summary)")
        #expect(stats.delivered == 147 && stats.duplicates == 0, "\(stats)")
        #expect(try outbox.deadTokens == 0)
        #expect(try outbox.scalar("SELECT last_error FROM digest_outbox WHERE state = 'dead' LIMIT 1").hasPrefix("PayloadTooLarge: "))
        try await server.shutdown()
    }

    /// Requests a GOAWAY left unprocessed are posted again at once on a new connection: no try lost,
    /// none counted, none delivered twice.
    @Test(arguments: TestStore.allCases)
    func aGoAwayResendsWhatItRefused(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let outbox = try await Outbox(backend, in: dir)
        try await Self.fill(outbox, count: 200)
        var faults = FakeAPNsServer.Faults()
        faults.minDelayMilliseconds = 20
        faults.maxDelayMilliseconds = 40
        let server = try await FakeAPNsServer.start(faults: faults)
        let goAway = Watcher.start(when: { server.stats.delivered >= 60 }) { server.goAway() }
        let summary = try await Self.send(outbox, server) { $0.concurrency = 32 } postgres: { $0.concurrency = 32 }
        goAway.cancel()
        let stats = server.stats
        #expect(goAway.fired && stats.goAways >= 1 && stats.connections >= 3, "\(stats)")
        #expect(summary.sent == 200 && summary.retriedTotal == 0, "\(summary)")
        #expect(stats.delivered == 200 && stats.duplicates == 0, "\(stats)")
        try await server.shutdown()
    }

    /// Dropped connections and 503s: every message ends sent or dead, each sent one was delivered,
    /// and duplicates come only from the dropped connections: the fake closes a connection with the
    /// answers it had not flushed yet, and a stream open on a lost connection may have been delivered
    /// (docs/003, the duplicate bound): at most the streams a connection carries, for each drop.
    @Test(arguments: TestStore.allCases)
    func exactlyOnceDespiteDroppedConnections(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let outbox = try await Outbox(backend, in: dir)
        let count = 300
        try await Self.fill(outbox, count: count)
        var faults = FakeAPNsServer.Faults()
        faults.dropRate = 0.05
        faults.unavailableRate = 0.1
        faults.unregisteredRate = 0.02
        let server = try await FakeAPNsServer.start(faults: faults)
        let summary = try await Self.send(outbox, server) {
            $0.maxAttempts = 40
            $0.concurrency = 32
        } postgres: {
            $0.maxAttempts = 40
            $0.concurrency = 32
        }
        let stats = server.stats
        let sent = try outbox.count("sent"), dead = try outbox.count("dead"), ready = try outbox.count("ready"), leased = try outbox.count("leased")
        #expect(sent + dead == count, "sent \(sent), dead \(dead), ready \(ready), leased \(leased); \(summary)")
        #expect(sent == stats.deliveredMessages, "sent \(sent); \(stats)")
        #expect(stats.duplicateMessages <= stats.answers["drop", default: 0] * 16, "\(stats)")
        #expect(summary.dead.keys.allSatisfy { $0 == "Unregistered" } && summary.retried["NETWORK", default: 0] > 0, "\(summary)")
        try await server.shutdown()
    }
}
