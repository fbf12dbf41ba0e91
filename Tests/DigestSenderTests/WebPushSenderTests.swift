import AsyncHTTPClient
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
import Testing

@testable import DigestSender

/// The Web Push sender in process against the fake push service on loopback over TLS, on both
/// stores: every message delivered once and decrypted to its row's plaintext, gone subscriptions
/// remembered as dead, a host not allowed and a refused key leaving their messages untried, retries.
@Suite struct WebPushSenderTests {
    typealias Outbox = APNsSenderTests.Outbox

    /// Web Push rows `1...count` for users `u<i>`, each to the subscription `target(i)` with its keys.
    static func fill(
        _ database: some DigestDatabase, count: Int, week: String = "2026-W46",
        subscription: (Int) -> (endpoint: String, p256dh: String, auth: String)
    ) async throws {
        let isoWeek = try ISOWeek(parsing: week)
        try await database.withLedger { ledger in
            _ = try await ledger.begin(week: isoWeek, now: 0)
            let messages = (1...count).map { i in
                let (endpoint, p256dh, auth) = subscription(i)
                let dedupeKey = "\(week):u\(i):\(endpoint)"
                let messageID = OutboxMessage.messageID(dedupeKey: dedupeKey)
                let headers = WebPushHeaders(topic: "digest-\(week)", expiresAt: 1_900_000_000, p256dh: p256dh, auth: auth)
                let plaintext = #"{"title":"Your week","body":"3 articles","tag":"digest-\#(week)","message_id":"\#(messageID)","digest_id":"\#(week)","deep_link":"https://example.com/digest"}"#
                return OutboxMessage(
                    dedupeKey: dedupeKey, week: week, userID: "u\(i)", platform: .web, variant: .defaultText, message: Array(plaintext.utf8),
                    report: "{}", availableAt: 0, messageID: messageID, provider: .webpush, target: endpoint, headers: headers.json)
            }
            _ = try await ledger.commit(week: isoWeek, through: 0, messages: messages, counters: RunCounters(), now: 0)
        }
    }

    static func fill(_ outbox: Outbox, count: Int, subscription: @escaping (Int) -> (endpoint: String, p256dh: String, auth: String)) async throws {
        try await outbox.run { try await fill($0, count: count, subscription: subscription) } _: { try await fill($0, count: count, subscription: subscription) }
    }

    /// Rows for subscriptions `s1…s<count>` at `server` (made with `key` unless `applicationServerKey`
    /// says otherwise).
    static func fill(_ outbox: Outbox, _ server: FakeWebPushServer, count: Int, applicationServerKey: (Int) -> String? = { _ in nil }) async throws {
        let subscribers = (1...count).map { server.subscribe(id: "s\($0)", applicationServerKey: applicationServerKey($0)) }
        try await fill(outbox, count: count) { i in (subscribers[i - 1].endpoint, subscribers[i - 1].p256dh, subscribers[i - 1].authBase64URL) }
    }

    /// A Web Push sender against `server` on `database`, time shrunk so retries take milliseconds.
    static func withSender<Database: DigestPipelineStore, T>(
        _ database: Database, server: FakeWebPushServer, key: VAPIDKey, allowing: [String] = ["127.0.0.1"],
        configure: (inout PushSender<Database>.Configuration) -> Void = { _ in },
        _ body: (PushSender<Database>) async throws -> T
    ) async throws -> T {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(server.certificatePath)]
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.tlsConfiguration = tls
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        var webPush = WebPushTransport.Configuration(subject: "mailto:push@example.com")
        webPush.allowedHosts = allowing
        webPush.connectionsPerOrigin = 2
        var configuration = PushSender<Database>.Configuration()
        configuration.concurrency = 16
        configuration.drain = true
        configuration.retry.timeScale = 0.001
        configuration.pollInterval = .milliseconds(50)
        configuration.owner = "test-\(UUID().uuidString.prefix(8))"
        configuration.caFile = server.certificatePath
        // A connect that times out counts an attempt (and, under a fixed clock, a retry never comes
        // due): in a full suite on two cores a TLS handshake has taken longer than the default 5 s.
        configuration.connectTimeout = .seconds(60)
        configure(&configuration)
        var logger = Logger(label: "test.webpush")
        logger.logLevel = .critical
        do {
            let sender = try PushSender(database: database, webPush: webPush, key: key, client: client, configuration: configuration, logger: logger)
            let result = try await body(sender)
            try? await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    static func send(
        _ outbox: Outbox, _ server: FakeWebPushServer, key: VAPIDKey, allowing: [String] = ["127.0.0.1"],
        configure: @escaping (inout PushSender<SQLiteDatabase>.Configuration) -> Void = { _ in },
        postgres: @escaping (inout PushSender<PostgresDatabase>.Configuration) -> Void = { _ in }
    ) async throws -> SendSummary {
        try await outbox.run { database in
            try await withSender(database, server: server, key: key, allowing: allowing, configure: configure) { try await $0.send() }
        } _: { database in
            try await withSender(database, server: server, key: key, allowing: allowing, configure: postgres) { try await $0.send() }
        }
    }

    @Test(arguments: TestStore.allCases)
    func everyMessageIsDeliveredOnceAndGoneSubscriptionsAreRememberedAsDead(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let outbox = try await Outbox(backend, in: dir)
        var faults = FakeWebPushServer.Faults()
        faults.minDelayMilliseconds = 2
        faults.maxDelayMilliseconds = 6
        let server = try await FakeWebPushServer.start(faults: faults, maxConcurrentStreams: 8, clock: { 1_795_000_000 })
        let key = VAPIDKey.generate()
        try await Self.fill(outbox, server, count: 60) { _ in key.publicKey }
        for gone in ["s7", "s30", "s44"] { server.unsubscribe(gone) }
        // The sender's clock from 1,795,000,000 on, moving with time: TTL is the seconds left to the
        // row's expiry (1,900,000,000) at the try, and a retry (a loaded machine's slow answer) comes due.
        let clock = SenderHarness.clock(from: 1_795_000_000)
        let summary = try await Self.send(outbox, server, key: key) { $0.clock = clock } postgres: { $0.clock = clock }
        let stats = server.stats
        #expect(summary.sent == 57 && summary.dead == ["GONE": 3] && summary.devicesRemoved == 3, "\(summary)")
        #expect(try outbox.count("sent") == 57 && outbox.count("dead") == 3 && outbox.deadTokens == 3)
        #expect(stats.delivered == 57 && stats.decrypted == 57 && stats.duplicateMessages == 0 && stats.vapidTokens == 1, "\(stats)")
        // One request a message, but for a retry (none on a quiet machine).
        #expect(stats.http2Requests == stats.requests && stats.requests == 60 + summary.retriedTotal, "\(stats) \(summary)")
        // What the service worker receives is the row's plaintext, and the receipt the push service's Location.
        let plaintext = try #require(server.deliveries("s12")?.plaintext)
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(plaintext)) as? [String: String])
        #expect(fields["title"] == "Your week" && fields["message_id"]?.count == 32 && fields["deep_link"] == "https://example.com/digest")
        let headers = try #require(server.deliveries("s12")?.headers)
        #expect(headers["urgency"] == "normal" && headers["topic"] == "digest-2026-W46" && headers.count == 3, "\(headers)")
        #expect((105_000_000 - 3600...105_000_000).contains(Int(headers["ttl"] ?? "") ?? 0), "\(headers)")
        #expect(try outbox.scalar("SELECT count(*) FROM digest_outbox WHERE fcm_name LIKE '\(server.origin)/m/s%'") == "57")
        #expect(try outbox.scalar("SELECT reason FROM digest_dead_tokens LIMIT 1").hasPrefix("GONE: \(server.origin) says"))
        try await server.shutdown()
    }

    /// A message to a host the sender may not contact stays ready and untried, with the reason,
    /// counted; the others go; `--drain` does not wait for it.
    @Test(arguments: TestStore.allCases)
    func aHostNotAllowedLeavesItsMessagesAsTheyAre(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let outbox = try await Outbox(backend, in: dir)
        let server = try await FakeWebPushServer.start()
        let key = VAPIDKey.generate()
        let subscribers = (1...10).map { server.subscribe(id: "s\($0)") }
        try await Self.fill(outbox, count: 10) { i in
            let endpoint = i <= 3 ? "https://push.example.net/push/s\(i)" : subscribers[i - 1].endpoint
            return (endpoint, subscribers[i - 1].p256dh, subscribers[i - 1].authBase64URL)
        }
        let summary = try await Self.send(outbox, server, key: key)
        #expect(summary.sent == 7 && summary.postponed == ["HOST_NOT_ALLOWED": 3] && summary.deadTotal == 0, "\(summary)")
        #expect(try outbox.count("sent") == 7 && outbox.count("ready") == 3)
        #expect(try outbox.scalar("SELECT count(*) FROM digest_outbox WHERE state = 'ready' AND attempts = 0 AND last_error LIKE 'HOST_NOT_ALLOWED: https://push.example.net is not a known push service%'") == "3")
        #expect(server.stats.requests == 7)
        try await server.shutdown()
    }

    /// A push service that refuses the sender's key for every subscription: two are tried, nothing more
    /// is sent there, nothing is dead, everything waits untried.
    @Test(arguments: TestStore.allCases)
    func aServiceRefusingTheKeyGetsNothingMoreAndNothingIsDead(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let outbox = try await Outbox(backend, in: dir)
        let server = try await FakeWebPushServer.start()
        let other = VAPIDKey.generate().publicKey
        try await Self.fill(outbox, server, count: 40) { _ in other }
        let summary = try await Self.send(outbox, server, key: .generate()) { $0.concurrency = 1 } postgres: { $0.concurrency = 1 }
        #expect(summary.sent == 0 && summary.deadTotal == 0 && summary.postponed == ["VAPID_REFUSED": 40], "\(summary)")
        #expect(try outbox.count("ready") == 40 && outbox.deadTokens == 0)
        // Each of the first two tried with its token and once more with a fresh one (the same, fresh already).
        #expect(server.stats.requests == 2 && server.stats.answers == ["401": 0, "403": 2].filter { $0.value > 0 }, "\(server.stats)")
        try await server.shutdown()
    }

    @Test(arguments: TestStore.allCases)
    func busyAndFailingAnswersAreRetriedUntilEachMessageIsDeliveredOnce(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let outbox = try await Outbox(backend, in: dir)
        var faults = FakeWebPushServer.Faults()
        faults.tooManyRequestsRate = 0.1
        faults.internalRate = 0.1
        faults.unavailableRate = 0.1
        let server = try await FakeWebPushServer.start(http1Only: true, faults: faults)
        try await Self.fill(outbox, server, count: 50)
        let summary = try await Self.send(outbox, server, key: .generate())
        let stats = server.stats
        #expect(summary.sent == 50 && summary.deadTotal == 0 && summary.retriedTotal > 0, "\(summary)")
        #expect(stats.delivered == 50 && stats.repeats == 0 && stats.duplicateMessages == 0 && stats.http2Requests == 0, "\(stats)")
        // The injected answers, and on a loaded machine a request that got none in time (NETWORK).
        #expect(Set(summary.retried.keys).isSubset(of: ["TOO_MANY_REQUESTS", "HTTP_500", "HTTP_503", "NETWORK"]), "\(summary)")
        #expect(summary.retried.filter { $0.key != "NETWORK" }.values.reduce(0, +) > 0, "\(summary)")
        try await server.shutdown()
    }
}
