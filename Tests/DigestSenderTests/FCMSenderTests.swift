import AsyncHTTPClient
@testable import DigestSender
import DigestStore
import DigestTesting
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// The sender in process against the fake FCM server on loopback.
@Suite struct FCMSenderTests {
    @Test func everyMessageIsDeliveredExactlyOnceAndRecordedWithItsName() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 300)
        let server = try await FakeFCMServer.start()
        let summary = try await SenderHarness.withSender(db: db, server: server, dir: dir) { sender, _ in try await sender.send() }
        #expect(summary.sent == 300)
        #expect(try OutboxFixture.states(path: db) == ["sent": 300])
        #expect(server.stats.delivered == 300 && server.stats.duplicates == 0)
        #expect(try OutboxFixture.scalar(path: db, "SELECT count(*) FROM digest_outbox WHERE fcm_name LIKE 'projects/digest-test/messages/%'") == "300")
        #expect(server.stats.accessTokens == 1)
        try await server.shutdown()
    }

    @Test func faultsEndSentOrDeadWithReasonsAndUnregisteredTokensAreRemembered() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 400) { $0 % 50 == 0 }  // 8 invalid messages
        var faults = FakeFCMServer.Faults()
        faults.unavailableRate = 0.3
        faults.internalRate = 0.05
        faults.dropRate = 0.05
        faults.unregisteredRate = 0.02
        faults.quotaBurstEvery = 0.5
        faults.quotaBurstLength = 0.05
        let server = try await FakeFCMServer.start(faults: faults)
        let summary = try await SenderHarness.withSender(db: db, server: server, dir: dir) { configuration in
            configuration.maxAttempts = 40
        } _: { sender, _ in try await sender.send() }
        let states = try OutboxFixture.states(path: db)
        #expect(states["sent", default: 0] + states["dead", default: 0] == 400)
        #expect(states["sent"] == server.stats.delivered)
        #expect(server.stats.duplicates == 0)
        let otherDead = try OutboxFixture.scalar(
            path: db, "SELECT group_concat(substr(last_error, 1, 60), ' | ') FROM digest_outbox WHERE state = 'dead' AND last_error NOT LIKE 'UNREGISTERED%'")
        #expect(summary.dead["INVALID_ARGUMENT"] == 8, "dead by reason: \(summary.dead); other dead: \(otherDead)")
        let unregistered = summary.dead["UNREGISTERED", default: 0]
        #expect(unregistered > 0)
        // The devices stay (a re-import would bring them back anyway); their tokens are remembered as dead.
        #expect(try OutboxFixture.scalar(path: db, "SELECT count(*) FROM devices") == "400")
        #expect(try OutboxFixture.scalar(path: db, "SELECT count(*) FROM digest_dead_tokens") == String(unregistered))
        #expect(try OutboxFixture.scalar(path: db, "SELECT count(*) FROM digest_outbox WHERE state = 'dead' AND last_error IS NULL") == "0")
        #expect(try OutboxFixture.scalar(path: db, "SELECT count(*) FROM digest_outbox WHERE last_error LIKE 'UNREGISTERED: %'") == String(unregistered))
        #expect(summary.retriedTotal > 0)
        try await server.shutdown()
    }

    /// The sender keeps the delivery promise at its own clock: nothing before its due time, a message
    /// whose window ended while the sender was down held through the reader's quiet hours, one past
    /// its TTL expired with its reason and never sent.
    @Test func aLateSenderHoldsThroughQuietHoursAndExpiresWhatOutlivedItsTTL() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        // Due Monday 09:00 in Warsaw (08:00Z); quiet from 21:00 (20:00Z) to Tuesday 08:00 (07:00Z).
        let due = Timestamp.parse("2026-11-16T08:00:00Z")!
        let hour: Int64 = 3600
        try OutboxFixture.fill(path: db, count: 3, availableAt: due)
        _ = try OutboxFixture.scalar(path: db, """
            UPDATE digest_outbox SET window_end = \(due + 12 * hour), quiet_until = \(due + 23 * hour),
                expires_at = CASE user_id WHEN 'u2' THEN \(due + hour) ELSE \(due + 48 * hour) END
            WHERE user_id IN ('u1', 'u2')
            """)  // u3: a --send-at now message, no window
        let server = try await FakeFCMServer.start()
        func drain(at instant: Int64) async throws -> SendSummary {
            try await SenderHarness.withSender(db: db, server: server, dir: dir) { configuration in
                configuration.clock = SenderHarness.clock(from: instant)
            } _: { sender, _ in try await sender.send() }
        }
        let early = try await drain(at: due - hour)
        #expect(early.sent == 0 && early.waiting == 3 && early.nextDue == due)
        #expect(early.lines().contains("not due yet: 3 (the first at 2026-11-16T08:00:00Z), waiting for their delivery time or held through quiet hours"))

        // The sender comes back at 23:00 in Warsaw: u3 goes at once, u1 waits for 08:00, u2 expired.
        let night = try await drain(at: due + 14 * hour)
        #expect(night.sent == 1 && night.waiting == 1 && night.nextDue == due + 23 * hour)
        #expect(try OutboxFixture.states(path: db) == ["sent": 1, "ready": 1, "expired": 1])
        #expect(try OutboxFixture.scalar(path: db, "SELECT last_error FROM digest_outbox WHERE user_id = 'u2'")
            == "EXPIRED: not sent before its TTL ended at 2026-11-16T09:00:00Z")
        #expect(try OutboxFixture.scalar(path: db, "SELECT available_at || ' ' || window_end FROM digest_outbox WHERE user_id = 'u1'")
            == "\(due + 23 * hour) \(due + 36 * hour)")

        let morning = try await drain(at: due + 23 * hour)
        #expect(morning.sent == 1 && morning.waiting == 0)
        #expect(try OutboxFixture.states(path: db) == ["sent": 2, "expired": 1])
        #expect(server.stats.delivered == 2)
        try await server.shutdown()
    }

    @Test func thirdPartyAuthErrorStopsTheSenderAndReleasesItsLeases() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 100)
        var faults = FakeFCMServer.Faults()
        faults.thirdPartyAuthError = true
        let server = try await FakeFCMServer.start(faults: faults)
        await #expect {
            try await SenderHarness.withSender(db: db, server: server, dir: dir) { sender, _ in try await sender.send() }
        } throws: { error in
            (error as? SenderError)?.code == .thirdPartyAuth && "\(error)".contains("APNs")
        }
        #expect(try OutboxFixture.states(path: db) == ["ready": 100])
        #expect(try OutboxFixture.scalar(path: db, "SELECT sum(attempts) FROM digest_outbox") == "0")
        try await server.shutdown()
    }

    @Test func aRefusedServiceAccountStopsBeforeLeasingAnything() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 10)
        let server = try await FakeFCMServer.start()
        let other = try await FakeFCMServer.start()  // a different key: the signature does not verify
        var account = try SenderHarness.account(other, in: dir)
        account.tokenURI = "\(server.url)/token"
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let tokens = try AccessTokenProvider(account: account, client: client, logger: Logger(label: "test"))
        await #expect {
            _ = try await tokens.token()
        } throws: { error in
            (error as? SenderError)?.code == .authentication && "\(error)".contains("invalid_grant")
        }
        try await client.shutdown()
        #expect(try OutboxFixture.states(path: db) == ["ready": 10])
        try await server.shutdown()
        try await other.shutdown()
    }

    @Test func accessTokensAreCachedAndRefreshedBeforeExpiry() async throws {
        let dir = try TemporaryDirectory()
        let server = try await FakeFCMServer.start(tokenLifetime: 3600)
        let account = try SenderHarness.account(server, in: dir)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let offset = Atomic<Int64>(0)
        var configuration = AccessTokenProvider.Configuration()
        configuration.clock = { Int64(Date().timeIntervalSince1970) + offset.load(ordering: .relaxed) }
        let tokens = try AccessTokenProvider(account: account, client: client, configuration: configuration, logger: Logger(label: "test"))
        let first = try await tokens.token()
        #expect(try await tokens.token() == first)
        #expect(tokens.currentToken() == first)
        #expect(await tokens.fetches == 1)
        offset.store(3600 - 300 - 60, ordering: .relaxed)  // a minute before the refresh point
        #expect(try await tokens.token() == first)
        offset.store(3600 - 300 + 1, ordering: .relaxed)  // past it, the token still valid
        #expect(tokens.currentToken() == nil)
        let second = try await tokens.token()
        #expect(second != first)
        #expect(await tokens.fetches == 2)
        await tokens.invalidate(second)
        #expect(try await tokens.token() != second)
        #expect(server.stats.accessTokens == 3)
        try await client.shutdown()
        try await server.shutdown()
    }

    @Test func aDryRunValidatesEveryDueMessageAndChangesNothing() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 90) { $0 == 7 }
        let server = try await FakeFCMServer.start()
        let summary = try await SenderHarness.withSender(db: db, server: server, dir: dir, validateOnly: true) { sender, _ in
            try await sender.send()
        }
        #expect(summary.validated == 89 && summary.dead == ["INVALID_ARGUMENT": 1] && summary.sent == 0)
        #expect(server.stats.validated == 89 && server.stats.delivered == 0)
        #expect(try OutboxFixture.states(path: db) == ["ready": 90])
    }

    @Test func messagesNotYetDueAreLeftForLater() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 5, availableAt: Int64(Date().timeIntervalSince1970) + 3600)
        let server = try await FakeFCMServer.start()
        let summary = try await SenderHarness.withSender(db: db, server: server, dir: dir) { sender, _ in try await sender.send() }
        #expect(summary.sent == 0 && server.stats.requests == 0)
        #expect(try OutboxFixture.states(path: db) == ["ready": 5])
    }

    /// The fake's token endpoint takes what Google's does: its own URL or Google's as the audience
    /// (Google's libraries use `https://oauth2.googleapis.com/token`), and any scope list that covers
    /// FCM (ours, or `cloud-platform` as the Firebase Admin SDKs send); nothing else.
    @Test(arguments: [
        ("https://www.googleapis.com/auth/firebase.messaging", nil, 200),
        ("https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/datastore https://www.googleapis.com/auth/devstorage.read_write https://www.googleapis.com/auth/firebase https://www.googleapis.com/auth/identitytoolkit https://www.googleapis.com/auth/userinfo.email",
         "https://oauth2.googleapis.com/token", 200),
        ("https://www.googleapis.com/auth/datastore", nil, 400),
        ("https://www.googleapis.com/auth/firebase.messaging", "https://example.com/token", 400),
    ] as [(String, String?, Int)])
    func theFakeTokenEndpointAcceptsWhatGooglesDoes(scope: String, audience: String?, status: Int) async throws {
        let dir = try TemporaryDirectory()
        let server = try await FakeFCMServer.start()
        let account = try SenderHarness.account(server, in: dir)
        let assertion = try JWTSigner(account: account).assertion(
            issuedAt: Int64(Date().timeIntervalSince1970), scope: scope, audience: audience)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var request = HTTPClientRequest(url: "\(server.url)/token")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
        let response = try await client.execute(request, timeout: .seconds(5))
        let body = String(buffer: try await response.body.collect(upTo: 1 << 16))
        #expect(Int(response.status.code) == status, "\(body)")
        #expect(server.stats.accessTokens == (status == 200 ? 1 : 0))
        try await client.shutdown()
        try await server.shutdown()
    }

    /// The fake advertises `maxConcurrentStreams` in its SETTINGS, and the sender's connections keep
    /// to it whatever its concurrency: more requests wait in the client, none is refused.
    @Test func connectionsKeepToTheServersStreamLimit() async throws {
        let dir = try TemporaryDirectory()
        guard let tls = try TestCertificate.make(in: dir.url) else {
            print("skipped: no openssl program to make a test certificate")
            return
        }
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 400)
        var faults = FakeFCMServer.Faults()
        faults.minDelayMilliseconds = 20
        faults.maxDelayMilliseconds = 30
        let server = try await FakeFCMServer.start(faults: faults, tls: tls, maxConcurrentStreams: 5)
        let summary = try await SenderHarness.withSender(db: db, server: server, dir: dir, trusting: tls.certificatePath) { configuration in
            configuration.concurrency = 64
        } _: { sender, _ in try await sender.send() }
        let stats = server.stats
        #expect(summary.sent == 400 && stats.delivered == 400 && stats.requests == 400, "\(stats)")
        #expect(stats.maxHTTP2Connections >= 1 && stats.maxInFlight <= 5 * stats.maxHTTP2Connections, "\(stats)")
        try await server.shutdown()
    }

    @Test func deliversOverHTTP2WithTLSExactlyOnceDespiteResetStreams() async throws {
        let dir = try TemporaryDirectory()
        guard let tls = try TestCertificate.make(in: dir.url) else {
            print("skipped: no openssl program to make a test certificate")
            return
        }
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 300)
        var faults = FakeFCMServer.Faults()
        faults.unavailableRate = 0.2
        faults.dropRate = 0.05  // on HTTP/2 a drop resets the stream
        let server = try await FakeFCMServer.start(faults: faults, tls: tls)
        #expect(server.url.hasPrefix("https://"))
        let summary = try await SenderHarness.withSender(db: db, server: server, dir: dir, trusting: tls.certificatePath) { configuration in
            configuration.maxAttempts = 40
        } _: { sender, _ in try await sender.send() }
        #expect(summary.sent == 300)
        #expect(server.stats.delivered == 300 && server.stats.duplicates == 0)
        #expect(server.stats.http2Requests == server.stats.requests)
        try await server.shutdown()
    }

    /// Over its own HTTP/2 connections a request with no answer by its deadline fails there (its
    /// stream reset) and is retried as a try; the connection goes on carrying the others.
    @Test func overHTTP2ALateAnswerFailsAtItsDeadlineAndIsRetried() async throws {
        let dir = try TemporaryDirectory()
        guard let tls = try TestCertificate.make(in: dir.url) else {
            print("skipped: no openssl program to make a test certificate")
            return
        }
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 20)
        var slow = FakeFCMServer.Faults()
        // Deadline and delay far apart, so a loaded machine's slow answers to the retries (no delay
        // then) still come in time (with 100 ms against 400 ms they did not, on 2 busy cores).
        slow.minDelayMilliseconds = 4_000
        slow.maxDelayMilliseconds = 4_000
        let server = try await FakeFCMServer.start(faults: slow, tls: tls)
        let quick = Watcher.start(when: { server.stats.requests >= 20 }) { server.setFaults(FakeFCMServer.Faults()) }
        let summary = try await SenderHarness.withSender(db: db, server: server, dir: dir, trusting: tls.certificatePath) { configuration in
            configuration.requestTimeout = .milliseconds(1_000)
            configuration.concurrency = 20
        } _: { sender, _ in try await sender.send() }
        quick.cancel()
        let stats = server.stats
        #expect(quick.fired && summary.sent == 20 && summary.retried["NETWORK", default: 0] >= 20, "\(summary)")
        #expect(stats.delivered == 20 && stats.requests >= 40 && stats.http2Requests == stats.requests, "\(stats)")
        try await server.shutdown()
    }


    /// The HTTP/1.1 case, in process: the sender with `digest send`'s defaults (1,200 at once
    /// over 12 connections) against an HTTP/1.1 fake FCM (plain http, or TLS without `h2`) with 20%
    /// 503 with Retry-After, 429 bursts 5% of the time, 2% dropped connections and 1% UNREGISTERED
    /// tokens, answering in 20 to 40 ms. Time is shrunk: retries wait a thousandth, and a request's
    /// deadline is 5 s (30 in production), still 125 times the server's slowest answer. (Before
    /// deadlines counted from the write and HTTP/1.1 carried one request a connection, 270 to 540 of
    /// the 1,662 messages were delivered twice here.)
    ///
    /// Every message ends sent or dead (UNREGISTERED only) and the server saw each sent one delivered
    /// once; no request ran out its deadline (the only failures without an answer are the dropped
    /// connections); and the server never had more requests at once than the sender has connections:
    /// over HTTP/1.1 a connection carries one request at a time.
    @Test(arguments: ["http", "https without h2"])
    func overHTTP1TheDefaultsDeliverEveryMessageExactlyOnce(scheme: String) async throws {
        let count = 1_662
        let dir = try TemporaryDirectory()
        var tls: FakeFCMServer.TLS?
        if scheme != "http" {
            guard let made = try TestCertificate.make(in: dir.url) else {
                print("skipped: no openssl program to make a test certificate")
                return
            }
            tls = made
            tls!.applicationProtocols = ["http/1.1"]
        }
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: count)
        let faults = FakeFCMServer.Faults.mixedFailures
        let server = try await FakeFCMServer.start(faults: faults, tls: tls)
        let connections = 12
        let summary = try await SenderHarness.withSender(
            db: db, server: server, dir: dir, trusting: tls?.certificatePath, transport: .digestSend(connections: connections)
        ) { configuration in
            // Answers come in 20–40 ms; the deadline is only for a stall of the loaded machine (a
            // request that outlives it is sent again, which this test counts as a duplicate).
            configuration.requestTimeout = .seconds(20)
        } _: { sender, _ in try await sender.send() }

        let stats = server.stats
        let states = try OutboxFixture.states(path: db)
        let twice = server.messageDeliveries.filter { $0.count > 1 }.map(\.token)
        #expect(twice.isEmpty && stats.duplicateMessages == 0, "\(twice.count) delivered twice, e.g. \(twice.prefix(3)); \(stats); \(summary)")
        #expect(states["sent", default: 0] + states["dead", default: 0] == count, "states: \(states)")
        #expect(states["sent"] == stats.deliveredMessages && summary.sent == stats.deliveredMessages, "\(states) \(stats)")
        #expect(summary.dead.keys.sorted() == ["UNREGISTERED"], "\(summary)")
        // Every dropped connection is a NETWORK retry; a loaded machine adds a few (a TLS handshake or
        // a connection that failed before the server saw a request).
        #expect(summary.retried["NETWORK", default: 0] >= stats.answers["drop", default: 0], "\(summary) \(stats)")
        #expect(stats.maxInFlight <= connections, "\(stats)")
        #expect(stats.answers["503", default: 0] > 0 && stats.answers["429", default: 0] > 0 && stats.answers["drop", default: 0] > 0, "\(stats)")
        #expect(stats.http2Requests == 0)
        try await server.shutdown()
    }

    /// An https endpoint that does not choose `h2` by ALPN is served by the HTTP client instead, the
    /// requests waiting for the first connection included.
    @Test func anHTTPSServerWithoutHTTP2IsServedOverHTTP1() async throws {
        let dir = try TemporaryDirectory()
        guard var tls = try TestCertificate.make(in: dir.url) else {
            print("skipped: no openssl program to make a test certificate")
            return
        }
        tls.applicationProtocols = ["http/1.1"]
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 100)
        let server = try await FakeFCMServer.start(tls: tls)
        let summary = try await SenderHarness.withSender(db: db, server: server, dir: dir, trusting: tls.certificatePath) { sender, _ in
            try await sender.send()
        }
        let stats = server.stats
        #expect(summary.sent == 100 && stats.delivered == 100 && stats.duplicates == 0, "\(stats)")
        #expect(stats.http2Requests == 0 && stats.http2Connections == 0, "\(stats)")
        try await server.shutdown()
    }

}
