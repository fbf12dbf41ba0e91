import AsyncHTTPClient
import DigestCore
import DigestFakes
import DigestSQLite
import DigestStore
import Foundation
import Logging
import NIOCore
import NIOSSL
import Synchronization
import Testing

@testable import DigestSender

/// One try of one Web Push message against the fake push service on loopback over TLS: the
/// request it makes (decrypted by the service with the subscription's keys, its headers, its VAPID
/// token) and what every answer comes to. The sender's runs over both stores are in
/// WebPushSenderTests.
@Suite struct WebPushTransportTests {
    static let now: Int64 = 1_795_000_000
    static let subject = "mailto:push@example.com"

    /// A transport against `server` (the host policy allowing its address unless `allowing` says
    /// otherwise), with `key` (a new one by default).
    final class Harness {
        let server: FakeWebPushServer
        let client: HTTPClient
        let transport: WebPushTransport
        let key: VAPIDKey
        var nextID: Int64 = 0

        init(server: FakeWebPushServer, key: VAPIDKey = .generate(), allowing: [String] = ["127.0.0.1"], connections: Int = 2) throws {
            self.server = server
            self.key = key
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(server.certificatePath)]
            var clientConfiguration = HTTPClient.Configuration()
            clientConfiguration.tlsConfiguration = tls
            client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
            var webPush = WebPushTransport.Configuration(subject: WebPushTransportTests.subject)
            webPush.connectionsPerOrigin = connections
            var configuration = PushSender<SQLiteDatabase>.Configuration()
            configuration.caFile = server.certificatePath
            configuration.connectTimeout = .seconds(60)  // a loaded full suite: see WebPushSenderTests
            configuration.concurrency = 8
            configuration.clock = { WebPushTransportTests.now }
            var logger = Logger(label: "test.webpush")
            logger.logLevel = .critical
            transport = WebPushTransport(
                webPush, client: client, vapid: try VAPIDToken(key: key, subject: WebPushTransportTests.subject),
                policy: try PushHostPolicy(allowing: allowing), sender: configuration, logger: logger)
        }

        deinit {
            transport.close()
            try? client.syncShutdown()
        }

        /// The outbox row for `subscriber` with `plaintext`, expiring a week after the test's now.
        func message(
            to subscriber: FakeWebPushServer.Subscriber, plaintext: String = #"{"title":"Your week","body":"3 articles","message_id":"m1"}"#,
            endpoint: String? = nil, headers: String? = nil
        ) -> LeasedMessage {
            nextID += 1
            let row = WebPushHeaders(
                urgency: .normal, topic: "digest-2026-W47", expiresAt: WebPushTransportTests.now + 604_800, p256dh: subscriber.p256dh,
                auth: subscriber.authBase64URL)
            return LeasedMessage(
                id: nextID, dedupeKey: "2026-W47:u\(nextID):\(subscriber.id)", userID: "u\(nextID)", platform: "web", message: plaintext,
                attempts: 1, provider: .webpush, target: endpoint ?? subscriber.endpoint, headers: headers ?? row.json)
        }

        func deliver(_ message: LeasedMessage) async -> PushOutcome { await transport.deliver(message, lane: 0) }
    }

    static func start(http1Only: Bool = false, faults: FakeWebPushServer.Faults = .init()) async throws -> FakeWebPushServer {
        try await FakeWebPushServer.start(http1Only: http1Only, faults: faults, clock: { WebPushTransportTests.now })
    }

    @Test(arguments: [false, true])
    func aMessageIsEncryptedToItsSubscriptionAndSentWithItsHeaders(http1Only: Bool) async throws {
        let server = try await Self.start(http1Only: http1Only)
        let harness = try Harness(server: server)
        let ana = server.subscribe(id: "ana", applicationServerKey: harness.key.publicKey)
        let plaintext = #"{"title":"Twój tydzień","body":"3 artykuły","message_id":"m-ana"}"#
        guard case .sent(let receipt) = await harness.deliver(harness.message(to: ana, plaintext: plaintext)) else {
            Issue.record("not sent: \(server.stats)")
            return
        }
        #expect(receipt.hasPrefix("\(server.origin)/m/ana-"))
        let delivery = try #require(server.deliveries("ana"))
        #expect(delivery.plaintext == Array(plaintext.utf8))
        #expect(delivery.headers == ["ttl": "604800", "urgency": "normal", "topic": "digest-2026-W47"])
        // A second message: encrypted afresh, the same VAPID token.
        guard case .sent = await harness.deliver(harness.message(to: ana)) else { Issue.record("second not sent"); return }
        let stats = server.stats
        #expect(stats.delivered == 1 && stats.repeats == 1 && stats.decrypted == 2 && stats.vapidTokens == 1 && harness.transport.vapid.issued == 1)
        #expect(stats.http2Requests == (http1Only ? 0 : 2), "\(stats)")
        try await server.shutdown()
    }

    @Test func unknownAndGoneSubscriptionsAreDeadDevices() async throws {
        let server = try await Self.start()
        let harness = try Harness(server: server)
        let ana = server.subscribe(id: "ana")
        let bo = server.subscribe(id: "bo")
        server.unsubscribe("bo")
        let stranger = FakeWebPushServer.Subscriber(
            id: "nobody", privateKey: ana.privateKey, auth: ana.auth, applicationServerKey: nil, endpoint: server.endpoint("nobody"))
        guard case .deviceDead(let notFound, nil, false) = await harness.deliver(harness.message(to: stranger)) else { Issue.record("404 not dead"); return }
        #expect(notFound.code == "NOT_FOUND" && notFound.detail.contains(server.origin) && !notFound.detail.contains("/push/"))
        guard case .deviceDead(let gone, _, _) = await harness.deliver(harness.message(to: bo)) else { Issue.record("410 not dead"); return }
        #expect(gone.code == "GONE")
        try await server.shutdown()
    }

    @Test func busyAndFailingServicesAreRetried() async throws {
        var faults = FakeWebPushServer.Faults()
        faults.tooManyRequestsRate = 1
        let server = try await Self.start(faults: faults)
        let harness = try Harness(server: server)
        let ana = server.subscribe(id: "ana")
        guard case .retry(let after, let failure, nil) = await harness.deliver(harness.message(to: ana)) else { Issue.record("429 not retried"); return }
        #expect(failure.code == "TOO_MANY_REQUESTS" && after == .seconds(60))  // FCM's minimum for a quota, beyond Retry-After: 1
        for (rate, code) in [(\FakeWebPushServer.Faults.internalRate, "HTTP_500"), (\.unavailableRate, "HTTP_503")] {
            var failing = FakeWebPushServer.Faults()
            failing[keyPath: rate] = 1
            server.setFaults(failing)
            guard case .retry(nil, let failure, nil) = await harness.deliver(harness.message(to: ana)) else { Issue.record("\(code) not retried"); return }
            #expect(failure.code == code)
        }
        try await server.shutdown()
    }

    /// A subscription made with another key, at a service that accepts the sender's key for others:
    /// that subscription is dead. A service that refuses the key for two subscriptions and accepted
    /// none: nothing more goes there, nothing is dead.
    @Test func vapidRefusalsTellAMismatchedSubscriptionFromARefusedKey() async throws {
        let server = try await Self.start()
        let harness = try Harness(server: server)
        let other = VAPIDKey.generate().publicKey
        let ana = server.subscribe(id: "ana", applicationServerKey: harness.key.publicKey)
        let old = server.subscribe(id: "old", applicationServerKey: other)
        // Nothing accepted yet: the refusal waits.
        guard case .postponed(let undecided, let wait) = await harness.deliver(harness.message(to: old)) else { Issue.record("not postponed"); return }
        #expect(undecided.code == "VAPID_REFUSED" && wait == .seconds(300))
        guard case .sent = await harness.deliver(harness.message(to: ana)) else { Issue.record("ana not sent"); return }
        guard case .deviceDead(let mismatch, _, _) = await harness.deliver(harness.message(to: old)) else { Issue.record("not dead"); return }
        #expect(mismatch.code == "VAPID_MISMATCH" && mismatch.detail.contains("applicationServerKey"))
        // The token was signed once: a fresh one (under 5 minutes old) is not signed again.
        #expect(harness.transport.vapid.issued == 1)

        // Another service, which no subscription there was made with this key for.
        let refusing = try await Self.start()
        let wrong = try Harness(server: refusing)
        let one = refusing.subscribe(id: "one", applicationServerKey: other)
        let two = refusing.subscribe(id: "two", applicationServerKey: other)
        let three = refusing.subscribe(id: "three", applicationServerKey: other)
        guard case .postponed(let first, _) = await wrong.deliver(wrong.message(to: one)) else { Issue.record("one not postponed"); return }
        guard case .postponed(let second, let blocked) = await wrong.deliver(wrong.message(to: two)) else { Issue.record("two not postponed"); return }
        #expect(first.code == "VAPID_REFUSED" && second.code == "VAPID_REFUSED" && blocked == .seconds(900) && second.detail.contains("--vapid-key-file"))
        let requests = refusing.stats.requests
        guard case .postponed(let third, _) = await wrong.deliver(wrong.message(to: three)) else { Issue.record("three not postponed"); return }
        #expect(third.code == "VAPID_REFUSED" && refusing.stats.requests == requests)  // not even asked
        try await server.shutdown()
        try await refusing.shutdown()
    }

    @Test func aHostNotAllowedIsNotContacted() async throws {
        let server = try await Self.start()
        let harness = try Harness(server: server, allowing: [])
        let ana = server.subscribe(id: "ana")
        guard case .postponed(let failure, let wait) = await harness.deliver(harness.message(to: ana)) else { Issue.record("not postponed"); return }
        #expect(failure.code == "HOST_NOT_ALLOWED")
        #expect(failure.detail.contains("add 127.0.0.1 to --allow-push-hosts") && wait == .seconds(900))
        #expect(server.stats.requests == 0)
        // Listed by name, a host that resolves to loopback is contacted (the operator chose it).
        let byName = try Harness(server: server, allowing: ["localhost"])
        let local = FakeWebPushServer.Subscriber(
            id: "ana", privateKey: ana.privateKey, auth: ana.auth, applicationServerKey: nil, endpoint: "https://localhost:\(server.port)/push/ana")
        let outcome = await byName.deliver(byName.message(to: local))
        // The VAPID audience is the endpoint's origin (https://localhost:port): the fake expects its
        // own (127.0.0.1), so it answers 401 — after the connection, which is what is checked here.
        #expect(server.stats.requests > 0, "\(outcome)")
        try await server.shutdown()
    }

    @Test func rowsThatCannotBeSentAreSettledWithoutARequest() async throws {
        let server = try await Self.start()
        let harness = try Harness(server: server)
        let ana = server.subscribe(id: "ana")
        guard case .messageDead(let badRow) = await harness.deliver(harness.message(to: ana, headers: #"{"urgency":"now"}"#)) else { Issue.record("bad row"); return }
        #expect(badRow.code == "BAD_ROW")
        guard case .deviceDead(let plain, _, _) = await harness.deliver(harness.message(to: ana, endpoint: "http://127.0.0.1:\(server.port)/push/ana")) else {
            Issue.record("http endpoint"); return
        }
        #expect(plain.code == "BAD_ENDPOINT" && !plain.detail.contains("/push/"))
        let badKeys = WebPushHeaders(topic: nil, expiresAt: Self.now + 60, p256dh: "BAAA", auth: ana.authBase64URL).json
        guard case .deviceDead(let keys, _, _) = await harness.deliver(harness.message(to: ana, headers: badKeys)) else { Issue.record("keys"); return }
        #expect(keys.code == "BAD_KEYS")
        let expired = WebPushHeaders(topic: nil, expiresAt: Self.now, p256dh: ana.p256dh, auth: ana.authBase64URL).json
        guard case .messageDead(let late) = await harness.deliver(harness.message(to: ana, headers: expired)) else { Issue.record("expired"); return }
        #expect(late.code == "EXPIRED")
        let big = #"{"title":""# + String(repeating: "x", count: 4_000) + #""}"#
        guard case .messageDead(let tooLarge) = await harness.deliver(harness.message(to: ana, plaintext: big)) else { Issue.record("too large"); return }
        #expect(tooLarge.code == "PAYLOAD_TOO_LARGE")
        #expect(server.stats.requests == 0)
        try await server.shutdown()
    }

    /// Endpoints come from subscribers: origins ever new (another port, another host name of an
    /// allowed service) are kept to a limit, the one asked for least recently forgotten, and made
    /// anew when asked for again.
    @Test func originsAreKeptToALimitTheLeastRecentlyUsedForgotten() {
        let made = Mutex<[String]>([])
        let origins = WebPushOrigins(limit: 3) { origin, _ in
            made.withLock { $0.append(origin) }
            return WebPushOrigin(origin: origin, exchanges: [])
        }
        let a = origins.origin("https://a.example", host: "a.example")
        for name in ["b", "c"] { _ = origins.origin("https://\(name).example", host: "\(name).example") }
        #expect(origins.origin("https://a.example", host: "a.example") === a)
        _ = origins.origin("https://d.example", host: "d.example")
        #expect(Set(origins.all.map(\.origin)) == ["https://a.example", "https://c.example", "https://d.example"])
        _ = origins.origin("https://b.example", host: "b.example")
        #expect(made.withLock { $0 } == ["a", "b", "c", "d", "b"].map { "https://\($0).example" })
        for port in 1...1000 { _ = origins.origin("https://a.example:\(port)", host: "a.example") }
        #expect(origins.all.count == 3)
    }

    @Test func thePolicyKnowsThePushServicesAndRefusesInsideAddresses() throws {
        let policy = try PushHostPolicy(allowing: ["push.example.net", "10.1.2.3", "[fd00::1]"])
        for host in ["fcm.googleapis.com", "updates.push.services.mozilla.com", "web.push.apple.com", "wns2-par02p.notify.windows.com", "push.example.net", "PUSH.example.net.", "10.1.2.3", "[FD00::1]"] {
            #expect(policy.allows(host: host), "\(host)")
        }
        for host in ["evil.example", "notify.windows.com.evil.example", "127.0.0.1", "fcm.googleapis.com.evil.example", "10.1.2.4"] {
            #expect(!policy.allows(host: host), "\(host)")
        }
        let loopback = try SocketAddress(ipAddress: "127.0.0.1", port: 443)
        #expect(!policy.allows(address: loopback, of: "fcm.googleapis.com"))
        #expect(policy.allows(address: try SocketAddress(ipAddress: "142.250.1.1", port: 443), of: "fcm.googleapis.com"))
        #expect(policy.allows(address: try SocketAddress(ipAddress: "10.1.2.3", port: 443), of: "fcm.googleapis.com"))
        #expect(policy.allows(address: try SocketAddress(ipAddress: "192.168.0.9", port: 443), of: "push.example.net"))
        for inside in ["10.0.0.1", "172.16.5.5", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "fe80::1", "fc00::5", "::ffff:127.0.0.1", "2001:db8::1"] {
            #expect(!policy.allows(address: try SocketAddress(ipAddress: inside, port: 443), of: "web.push.apple.com"), "\(inside)")
        }
        #expect(policy.allows(address: try SocketAddress(ipAddress: "2a00:1450:4001::200e", port: 443), of: "fcm.googleapis.com"))
        #expect(throws: SenderError.self) { try PushHostPolicy(allowing: ["https://push.example.net"]) }
        #expect(throws: SenderError.self) { try PushHostPolicy(allowing: ["*.example.net"]) }
        #expect(throws: SenderError.self) { try PushHostPolicy(allowing: ["push.example.net:8443"]) }
    }
}
