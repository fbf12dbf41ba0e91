import AsyncHTTPClient
import Crypto
import DigestTesting
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization
import Testing

/// The fake APNs server answers as Apple documents, to a real HTTP/2 client over TLS
/// (async-http-client), and keeps its connections' streams as APNs does (a raw NIO HTTP/2 client).
@Suite struct FakeAPNsServerTests {
    static let now: Int64 = 1_800_000_000
    static let token = String(repeating: "ab", count: 32)

    /// A client of one server: trusts its certificate, signs with its key. A test that fails half-way
    /// (a thrown error before ``shutdown()``) still shuts the HTTP client down, in `deinit`: an
    /// async-http-client left running traps in debug builds and would take the whole test run with it.
    final class Client: Sendable {
        let server: FakeAPNsServer
        let http: HTTPClient
        let key: P256.Signing.PrivateKey
        /// The provider token of every request that names none: one, as Apple asks (each new one is an update).
        let token: String

        init(_ server: FakeAPNsServer) throws {
            self.server = server
            var configuration = HTTPClient.Configuration()
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(server.certificatePath)]
            configuration.tlsConfiguration = tls
            http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            key = try P256.Signing.PrivateKey(pemRepresentation: server.keyPEM)
            token = try FakeAPNsServerTests.jwt(iat: FakeAPNsServerTests.now, kid: server.keyID, iss: server.teamID, key: key)
        }

        func jwt(iat: Int64 = FakeAPNsServerTests.now, kid: String? = nil, iss: String? = nil, alg: String = "ES256",
                 key: P256.Signing.PrivateKey? = nil) throws -> String {
            try FakeAPNsServerTests.jwt(iat: iat, kid: kid ?? server.keyID, iss: iss ?? server.teamID, alg: alg, key: key ?? self.key)
        }

        struct Response {
            var status: Int
            var headers: HTTPHeaders
            var body: String
            var reason: String? { ((try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any])?["reason"] as? String }
        }

        /// Sends a request; `headers` nil values are left out, `authorization` nil means a valid JWT.
        func send(token: String = FakeAPNsServerTests.token, path: String? = nil, method: HTTPMethod = .POST,
                  authorization: String?? = nil, headers: [(String, String)] = [("apns-topic", "com.example.digest"), ("apns-push-type", "alert")],
                  body: String? = #"{"aps":{"alert":{"title":"Your week","body":"3 stories"}}}"#) async throws -> Response {
            var request = HTTPClientRequest(url: server.url + (path ?? "/3/device/\(token)"))
            request.method = method
            switch authorization {
            case .none: request.headers.add(name: "authorization", value: "bearer \(self.token)")
            case .some(.some(let value)): request.headers.add(name: "authorization", value: value)
            case .some(.none): break
            }
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            if let body { request.body = .bytes(ByteBuffer(string: body)) }
            // Generous: a deadline against hangs, not a latency check (the whole suite shares two cores).
            let response = try await http.execute(request, timeout: .seconds(60))
            let text = String(buffer: try await response.body.collect(upTo: 1 << 16))
            return Response(status: Int(response.status.code), headers: response.headers, body: text)
        }

        func shutdown() async throws {
            try await http.shutdown()
            try await server.shutdown()
        }

        deinit {
            try? http.syncShutdown()  // already shut down: an error, ignored
        }
    }

    static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func jwt(iat: Int64, kid: String, iss: String, alg: String = "ES256", key: P256.Signing.PrivateKey) throws -> String {
        let header = base64URL(Array(#"{"alg":"\#(alg)","kid":"\#(kid)"}"#.utf8))
        let claims = base64URL(Array(#"{"iss":"\#(iss)","iat":\#(iat)}"#.utf8))
        let signature = try key.signature(for: Array("\(header).\(claims)".utf8))
        return "\(header).\(claims).\(base64URL(signature.rawRepresentation))"
    }

    static func start(faults: FakeAPNsServer.Faults = .init(), clock: @escaping @Sendable () -> Int64 = { FakeAPNsServerTests.now })
        async throws -> Client?
    {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") || FileManager.default.isExecutableFile(atPath: "/usr/local/bin/openssl")
        else {
            print("skipped: no openssl program to make a test certificate")
            return nil
        }
        return try Client(try await FakeAPNsServer.start(faults: faults, clock: clock))
    }

    @Test func acceptsAValidRequestAndEchoesItsAPNsID() async throws {
        guard let client = try await Self.start() else { return }
        let id = "6E0A9D4C-2B1F-4C3E-9A7D-0F1E2D3C4B5A"
        let payload = #"{"aps":{"alert":{"title":"Your week","body":"3 stories"},"mutable-content":1},"digest":"2026-W46"}"#
        let headers = [("apns-topic", "com.example.digest"), ("apns-push-type", "alert"), ("apns-priority", "10"), ("apns-expiration", "0"),
                       ("apns-collapse-id", "digest-2026-W46"), ("apns-id", id)]
        let first = try await client.send(headers: headers, body: payload)
        #expect(first.status == 200 && first.body.isEmpty && first.headers["apns-id"] == [id])
        let again = try await client.send(token: Self.token.uppercased(), headers: headers, body: payload)
        #expect(again.status == 200)
        // Without an apns-id, a new UUID; another payload to the same token is another message.
        let other = try await client.send(body: #"{"aps":{"badge":3}}"#)
        #expect(other.status == 200)
        let generated = try #require(other.headers["apns-id"].first)
        #expect(generated.count == 36 && UUID(uuidString: generated) != nil)

        let delivery = try #require(client.server.deliveries(token: Self.token.uppercased()))
        #expect(delivery.count == 3 && delivery.payload == Array(#"{"aps":{"badge":3}}"#.utf8))
        #expect(delivery.headers == ["apns-topic": "com.example.digest", "apns-push-type": "alert"])
        #expect(client.server.deliveries(token: String(repeating: "cd", count: 32)) == nil)
        let stats = client.server.stats
        #expect(stats.requests == 3 && stats.answers == ["200": 3] && stats.delivered == 1 && stats.duplicates == 2, "\(stats)")
        #expect(stats.deliveredMessages == 2 && stats.duplicateMessages == 1 && stats.providerTokens == 1, "\(stats)")
        #expect(stats.connections == 1 && stats.maxConnections == 1 && stats.refusedStreams == 0, "\(stats)")
        try await client.shutdown()
    }

    /// Every check, with the status and reason Apple documents (and the fake's own `BadPayload`).
    @Test func refusesBadRequestsAsAPNsDoes() async throws {
        guard let client = try await Self.start() else { return }
        #expect(try await client.send().status == 200)  // the valid provider token, first
        let topic = ("apns-topic", "com.example.digest")
        let alert = ("apns-push-type", "alert")
        let otherKey = P256.Signing.PrivateKey()
        let cases: [(String, Client.Response, Int, String)] = [
            ("other path", try await client.send(path: "/3/devices/\(Self.token)"), 404, "BadPath"),
            ("root path", try await client.send(path: "/"), 404, "BadPath"),
            ("GET", try await client.send(method: .GET, body: nil), 405, "MethodNotAllowed"),
            ("PUT", try await client.send(method: .PUT), 405, "MethodNotAllowed"),
            ("token not hex", try await client.send(token: String(repeating: "zz", count: 32)), 400, "BadDeviceToken"),
            ("token too short", try await client.send(token: String(repeating: "a", count: 63)), 400, "BadDeviceToken"),
            ("token too long", try await client.send(token: String(repeating: "a", count: 202)), 400, "BadDeviceToken"),
            ("no token", try await client.send(token: ""), 400, "MissingDeviceToken"),
            ("no topic", try await client.send(headers: [alert]), 400, "MissingTopic"),
            ("blank topic", try await client.send(headers: [("apns-topic", " "), alert]), 400, "BadTopic"),
            ("other topic", try await client.send(headers: [("apns-topic", "com.example.other"), alert]), 400, "TopicDisallowed"),
            ("push type", try await client.send(headers: [topic, ("apns-push-type", "banner")]), 400, "InvalidPushType"),
            ("priority", try await client.send(headers: [topic, alert, ("apns-priority", "7")]), 400, "BadPriority"),
            ("expiration", try await client.send(headers: [topic, alert, ("apns-expiration", "tomorrow")]), 400, "BadExpirationDate"),
            ("negative expiration", try await client.send(headers: [topic, alert, ("apns-expiration", "-1")]), 400, "BadExpirationDate"),
            ("collapse id", try await client.send(headers: [topic, alert, ("apns-collapse-id", String(repeating: "x", count: 65))]), 400, "BadCollapseId"),
            ("apns-id", try await client.send(headers: [topic, alert, ("apns-id", "not-a-uuid")]), 400, "BadMessageId"),
            ("twice", try await client.send(headers: [topic, topic, alert]), 400, "DuplicateHeaders"),
            ("empty", try await client.send(body: nil), 400, "PayloadEmpty"),
            ("large", try await client.send(body: #"{"aps":{"alert":"\#(String(repeating: "x", count: 4080))"}}"#), 413, "PayloadTooLarge"),
            ("not JSON", try await client.send(body: "hello"), 400, "BadPayload"),
            ("trailing bytes", try await client.send(body: #"{"aps":{"alert":"x"}} x"#), 400, "BadPayload"),
            ("no aps", try await client.send(body: #"{"alert":"x"}"#), 400, "BadPayload"),
            ("aps not an object", try await client.send(body: #"{"aps":"x"}"#), 400, "BadPayload"),
            ("alert push without alert", try await client.send(body: #"{"aps":{"content-available":1}}"#), 400, "BadPayload"),
            ("no provider token", try await client.send(authorization: .some(nil)), 403, "MissingProviderToken"),
            ("not bearer", try await client.send(authorization: "basic abc"), 403, "InvalidProviderToken"),
            ("garbage", try await client.send(authorization: "bearer abc.def"), 403, "InvalidProviderToken"),
            ("other key", try await client.send(authorization: "bearer \(try client.jwt(key: otherKey))"), 403, "InvalidProviderToken"),
            ("unknown kid", try await client.send(authorization: "bearer \(try client.jwt(kid: "ZZZ999ZZZZ"))"), 403, "InvalidProviderToken"),
            ("other team", try await client.send(authorization: "bearer \(try client.jwt(iss: "ZZZ999ZZZZ"))"), 403, "InvalidProviderToken"),
            ("not ES256", try await client.send(authorization: "bearer \(try client.jwt(alg: "ES384"))"), 403, "InvalidProviderToken"),
            ("expired", try await client.send(authorization: "bearer \(try client.jwt(iat: Self.now - 3601))"), 403, "ExpiredProviderToken"),
            ("future", try await client.send(authorization: "bearer \(try client.jwt(iat: Self.now + 61))"), 403, "InvalidProviderToken"),
        ]
        for (name, response, status, reason) in cases {
            #expect(response.status == status && response.reason == reason, "\(name): \(response.status) \(response.body)")
            #expect(response.headers["apns-id"].count == 1, "\(name)")
        }
        // What is allowed: a VoIP push to the .voip topic up to 5,120 bytes, no push type at all, priority 5
        // and 1, an upper-case apns-id, a token of 200 digits.
        let voip = #"{"aps":{},"call":"\#(String(repeating: "x", count: 5000))"}"#
        #expect(try await client.send(headers: [("apns-topic", "com.example.digest.voip"), ("apns-push-type", "voip")], body: voip).status == 200)
        #expect(try await client.send(headers: [topic]).status == 200)
        #expect(try await client.send(headers: [topic, alert, ("apns-priority", "5")]).status == 200)
        #expect(try await client.send(headers: [topic, alert, ("apns-priority", "1")]).status == 200)
        #expect(try await client.send(headers: [topic, alert, ("apns-id", "6E0A9D4C-2B1F-4C3E-9A7D-0F1E2D3C4B5A")]).status == 200)
        #expect(try await client.send(token: String(repeating: "A", count: 200)).status == 200)
        #expect(try await client.send(headers: [topic, ("apns-push-type", "background")], body: #"{"aps":{"content-available":1}}"#).status == 200)
        let stats = client.server.stats
        #expect(stats.answers["200"] == 8 && stats.answers["400 BadPayload"] == 5 && stats.answers["403 InvalidProviderToken"] == 7, "\(stats)")
        #expect(stats.requests == 1 + cases.count + 7 && stats.delivered == 2, "\(stats)")
        try await client.shutdown()
    }

    /// Apple refuses a new provider token on a connection less than 20 minutes after the previous
    /// one; the previous one keeps working, a token 21 minutes later is taken, and another connection
    /// may use a token of its own.
    @Test func refusesProviderTokenUpdatesWithinTwentyMinutes() async throws {
        let clock = TestClock(Self.now)
        guard let client = try await Self.start(clock: { clock.seconds.load(ordering: .relaxed) }) else { return }
        let first = client.token
        #expect(try await client.send(authorization: "bearer \(first)").status == 200)
        clock.seconds.store(Self.now + 300, ordering: .relaxed)
        let soon = try await client.send(authorization: "bearer \(try client.jwt(iat: Self.now + 300))")
        #expect(soon.status == 429 && soon.reason == "TooManyProviderTokenUpdates", "\(soon.body)")
        #expect(try await client.send(authorization: "bearer \(first)").status == 200)
        clock.seconds.store(Self.now + 21 * 60, ordering: .relaxed)
        let later = try client.jwt(iat: Self.now + 21 * 60)
        #expect(try await client.send(authorization: "bearer \(later)").status == 200)
        #expect(try await client.send(authorization: "bearer \(first)").status == 200)  // still within its hour
        clock.seconds.store(Self.now + 3601, ordering: .relaxed)
        let expired = try await client.send(authorization: "bearer \(first)")
        #expect(expired.status == 403 && expired.reason == "ExpiredProviderToken")
        #expect(try await client.send(authorization: "bearer \(later)").status == 200)
        #expect(client.server.stats.providerTokens == 3)
        // A token signed again with the same iat is another token, refused as an update.
        let resigned = try await client.send(authorization: "bearer \(try client.jwt(iat: Self.now + 21 * 60))")
        #expect(resigned.status == 429 && resigned.reason == "TooManyProviderTokenUpdates")
        // Updates are counted per connection: another connection may bring its own token.
        let other = try Client(client.server)
        #expect(try await other.send(authorization: "bearer \(try client.jwt(iat: Self.now + 3601))").status == 200)
        try await other.http.shutdown()
        try await client.shutdown()
    }

    @Test func answersTheTokensFaults() async throws {
        let gone = String(repeating: "01", count: 32)
        let bad = String(repeating: "02", count: 32)
        var faults = FakeAPNsServer.Faults()
        faults.unregistered = [gone.uppercased(): 1_700_000_000_123]
        faults.badDeviceTokens = [bad]
        guard let client = try await Self.start(faults: faults) else { return }
        let unregistered = try await client.send(token: gone)
        #expect(unregistered.status == 410 && unregistered.reason == "Unregistered")
        let body = try #require((try JSONSerialization.jsonObject(with: Data(unregistered.body.utf8))) as? [String: Any])
        #expect((body["timestamp"] as? NSNumber)?.int64Value == 1_700_000_000_123)
        let refused = try await client.send(token: bad)
        #expect(refused.status == 400 && refused.reason == "BadDeviceToken")
        #expect(try await client.send().status == 200)

        // By rate: every token unregistered since a day before the server's now.
        faults = .init()
        faults.unregisteredRate = 1
        client.server.setFaults(faults)
        let byRate = try await client.send()
        let rateBody = try #require((try JSONSerialization.jsonObject(with: Data(byRate.body.utf8))) as? [String: Any])
        #expect(byRate.status == 410 && (rateBody["timestamp"] as? NSNumber)?.int64Value == Self.now * 1000 - 86_400_000)
        faults = .init()
        faults.badDeviceTokenRate = 1
        client.server.setFaults(faults)
        #expect(try await client.send().reason == "BadDeviceToken")
        faults = .init()
        faults.wrongEnvironment = true
        client.server.setFaults(faults)
        #expect(try await client.send(token: String(repeating: "03", count: 32)).reason == "BadDeviceToken")

        // About a tenth of tokens at a rate of 0.1, the same ones each time.
        faults = .init()
        faults.unregisteredRate = 0.1
        client.server.setFaults(faults)
        var unregisteredTokens: [Int] = []
        for i in 0..<100 {
            let token = String(format: "%064lx", i * 7919)
            if try await client.send(token: token).status == 410 { unregisteredTokens.append(i) }
        }
        #expect((3...20).contains(unregisteredTokens.count), "\(unregisteredTokens.count)")
        for i in unregisteredTokens.prefix(3) { #expect(try await client.send(token: String(format: "%064lx", i * 7919)).status == 410) }
        try await client.shutdown()
    }

    @Test func injectsErrorsAfterTheChecks() async throws {
        guard let client = try await Self.start() else { return }
        let cases: [(WritableKeyPath<FakeAPNsServer.Faults, Double>, Int, String)] = [
            (\.tooManyRequestsRate, 429, "TooManyRequests"), (\.internalRate, 500, "InternalServerError"), (\.unavailableRate, 503, "ServiceUnavailable"),
        ]
        for (rate, status, reason) in cases {
            var faults = FakeAPNsServer.Faults()
            faults[keyPath: rate] = 1
            client.server.setFaults(faults)
            let response = try await client.send()
            #expect(response.status == status && response.reason == reason, "\(response.body)")
            // A bad request is still a bad request.
            #expect(try await client.send(headers: [("apns-push-type", "alert")]).reason == "MissingTopic")
            #expect(try await client.send(authorization: .some(nil)).reason == "MissingProviderToken")
        }
        var faults = FakeAPNsServer.Faults()
        faults.dropRate = 1
        client.server.setFaults(faults)
        await #expect(throws: (any Error).self) { try await client.send() }
        client.server.setFaults(.init())
        #expect(try await client.send().status == 200)
        let stats = client.server.stats
        #expect(stats.answers["drop"] == 1 && stats.answers["429 TooManyRequests"] == 1 && stats.answers["200"] == 1, "\(stats)")
        #expect(stats.delivered == 1 && stats.connections == 2, "\(stats)")
        try await client.shutdown()
    }

    @Test func delaysAnswersWithoutHoldingTheOthers() async throws {
        var faults = FakeAPNsServer.Faults()
        faults.minDelayMilliseconds = 300
        faults.maxDelayMilliseconds = 300
        guard let client = try await Self.start(faults: faults) else { return }
        let start = ContinuousClock.now
        #expect(try await client.send().status == 200)
        // After the first success the connection carries many at once: ten answers in about one delay.
        try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<10 { group.addTask { try await client.send(token: String(format: "%064lx", i)).status } }
            for try await status in group { #expect(status == 200) }
        }
        let elapsed = ContinuousClock.now - start
        // Concurrent, not one after another (which takes at least 3.3 s): the server's own count says so,
        // whatever the machine's load does to the wall time.
        #expect(elapsed >= .milliseconds(600), "\(elapsed)")
        let stats = client.server.stats
        #expect(stats.maxInFlight > 1 && stats.maxStreamsUsed > 1 && stats.refusedStreams == 0, "\(stats)")
        try await client.shutdown()
    }

    /// Before the first success an async-http-client connection carries one stream at a time (403s do
    /// not raise the limit).
    @Test func oneStreamAtATimeUntilTheFirstSuccess() async throws {
        var faults = FakeAPNsServer.Faults()
        faults.minDelayMilliseconds = 50
        faults.maxDelayMilliseconds = 50
        guard let client = try await Self.start(faults: faults) else { return }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<6 { group.addTask { try await client.send(authorization: .some(nil)).status } }
            for try await status in group { #expect(status == 403) }
        }
        let stats = client.server.stats
        #expect(stats.maxStreamsUsed == 1 && stats.refusedStreams == 0, "\(stats)")
        try await client.shutdown()
    }

    /// At the frame level: SETTINGS_MAX_CONCURRENT_STREAMS 1, streams beyond it refused, then a new
    /// SETTINGS with the server's limit after the first 200, and that many streams at once.
    @Test(.timeLimit(.minutes(1))) func advertisesOneStreamThenManyAfterTheFirstSuccess() async throws {
        var faults = FakeAPNsServer.Faults()
        faults.minDelayMilliseconds = 300
        faults.maxDelayMilliseconds = 300
        guard let client = try await Self.start(faults: faults) else { return }
        let jwt = try client.jwt()
        let connection = try await RawHTTP2Connection.connect(to: client.server)
        // Four at once. Written before the client read the server's first SETTINGS, the three beyond
        // the first are refused; when the client had read them (a slow start on a loaded machine), its
        // HTTP/2 handler holds the three back until the first is answered, which raises the limit.
        let firsts = try await connection.send(count: 4, authorization: jwt)
        let heldBack = firsts.allSatisfy { $0.status == 200 }
        if !heldBack {
            #expect(firsts.map(\.status) == [200, nil, nil, nil], "\(firsts)")
            #expect(firsts.dropFirst().allSatisfy { $0.reset == .refusedStream }, "\(firsts)")
        }
        try await connection.waitForSettings(count: 2)
        #expect(connection.maxConcurrentStreamsSeen == [1, 1000])
        let seconds = try await connection.send(count: 8, authorization: jwt)
        #expect(seconds.map(\.status) == Array(repeating: 200, count: 8), "\(seconds)")
        let stats = client.server.stats
        #expect(stats.refusedStreams == (heldBack ? 0 : 3) && stats.maxStreamsUsed == 8, "\(stats)")
        #expect(stats.answers == ["200": heldBack ? 12 : 9], "\(stats)")
        try await connection.close()
        try await client.shutdown()
    }

    @Test func goAwayAnswersItsStreamsAndTheClientReconnects() async throws {
        guard let client = try await Self.start() else { return }
        #expect(try await client.send().status == 200)
        client.server.goAway()
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await client.send().status == 200)
        let stats = client.server.stats
        #expect(stats.goAways == 1 && stats.connections == 2 && stats.maxConnections == 1, "\(stats)")
        try await client.shutdown()
    }

    @Test func statsOverHTTPAndTheKeyAsAP8() async throws {
        guard let client = try await Self.start() else { return }
        #expect(try await client.send().status == 200)
        let response = try await client.send(path: "/stats", method: .GET, body: nil)
        let stats = try JSONDecoder().decode(FakeAPNsServer.Stats.self, from: Data(response.body.utf8))
        #expect(response.status == 200 && stats.delivered == 1 && stats.requests == 1, "\(response.body)")

        let dir = try TemporaryDirectory()
        let path = dir.path("AuthKey_\(client.server.keyID).p8")
        try client.server.writeKey(to: path)
        let pem = try String(contentsOfFile: path, encoding: .utf8)
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----") && pem == client.server.keyPEM)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try P256.Signing.PrivateKey(pemRepresentation: pem).publicKey.rawRepresentation == client.key.publicKey.rawRepresentation)

        // Another key, added: its tokens are taken too.
        let other = P256.Signing.PrivateKey()
        client.server.addKey(id: "XYZ987WVUT", publicKey: other.publicKey)
        let signed = try client.jwt(kid: "XYZ987WVUT", key: other)
        // On this connection it would be a token update (Apple counts them per team, whatever the key)
        // — unless the client opened another connection meanwhile (a loaded machine) …
        let before = client.server.stats.connections
        let update = try await client.send(authorization: "bearer \(signed)")
        let reopened = client.server.stats.connections > before
        #expect(update.reason == "TooManyProviderTokenUpdates" || (reopened && update.status == 200), "\(update)")
        // … on a connection of its own it is taken.
        let connection = try Client(client.server)
        #expect(try await connection.send(authorization: "bearer \(signed)").status == 200)
        try await connection.http.shutdown()
        try await client.shutdown()
    }
}

/// The server's clock in a test: Unix seconds, moved by hand.
final class TestClock: Sendable {
    let seconds: Atomic<Int64>
    init(_ seconds: Int64) { self.seconds = Atomic(seconds) }
}

/// A bare HTTP/2 client over TLS that writes its streams' frames itself, at once, whatever the
/// server's SETTINGS: to see what the server does with streams beyond its limit.
final class RawHTTP2Connection: Sendable {
    struct Outcome: Sendable, CustomStringConvertible {
        var status: Int?
        var reset: HTTP2ErrorCode?
        var description: String { status.map(String.init) ?? "reset \(reset.map { "\($0)" } ?? "?")" }
    }

    private struct Seen {
        var outcomes: [Int32: Outcome] = [:]
        var finished: Set<Int32> = []
        var settings: [Int] = []
        var waiters: [Int32: CheckedContinuation<Void, Never>] = [:]

        /// The stream's answer is whole (or it was reset): its waiter goes on.
        mutating func finish(_ id: Int32) {
            finished.insert(id)
            waiters.removeValue(forKey: id)?.resume()
        }
    }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTP2Frame
        let seen = Mutex(Seen())

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            let id = Int32(frame.streamID)
            seen.withLock { seen in
                switch frame.payload {
                case .headers(let headers):
                    seen.outcomes[id, default: Outcome()].status = headers.headers.first(name: ":status").flatMap { Int($0) }
                    if headers.endStream { seen.finish(id) }
                case .data(let data):
                    if data.endStream { seen.finish(id) }
                case .rstStream(let code):
                    seen.outcomes[id, default: Outcome()].reset = code
                    seen.finish(id)
                case .settings(.settings(let settings)):
                    for setting in settings where setting.parameter == .maxConcurrentStreams { seen.settings.append(setting.value) }
                default:
                    break
                }
            }
        }
    }

    private let channel: any Channel
    private let collector: Collector
    private let nextStream = Mutex<Int32>(1)

    private init(channel: any Channel, collector: Collector) {
        self.channel = channel
        self.collector = collector
    }

    static func connect(to server: FakeAPNsServer) async throws -> RawHTTP2Connection {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(server.certificatePath)]
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let collector = Collector()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: nil))
                    try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client))
                    try channel.pipeline.syncOperations.addHandler(collector)
                }
            }
            .connect(host: "127.0.0.1", port: server.port).get()
        return RawHTTP2Connection(channel: channel, collector: collector)
    }

    var maxConcurrentStreamsSeen: [Int] { collector.seen.withLock { $0.settings } }

    /// Writes `count` requests at once (one flush) and waits for each one's answer or reset.
    func send(count: Int, authorization: String) async throws -> [Outcome] {
        let ids: [Int32] = nextStream.withLock { next in
            let ids = (0..<count).map { next + 2 * Int32($0) }
            next += 2 * Int32(count)
            return ids
        }
        let body = #"{"aps":{"alert":"hello"}}"#
        try await channel.eventLoop.submit { [channel] in
            for (index, id) in ids.enumerated() {
                let headers: HPACKHeaders = [
                    ":method": "POST", ":scheme": "https", ":authority": "127.0.0.1", ":path": "/3/device/\(String(format: "%064lx", index + Int(id)))",
                    "authorization": "bearer \(authorization)", "apns-topic": "com.example.digest", "apns-push-type": "alert",
                    "content-length": String(body.utf8.count),
                ]
                channel.write(HTTP2Frame(streamID: HTTP2StreamID(id), payload: .headers(.init(headers: headers))), promise: nil)
                let buffer = channel.allocator.buffer(string: body)
                channel.write(HTTP2Frame(streamID: HTTP2StreamID(id), payload: .data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
            }
            channel.flush()
        }.get()
        for id in ids { await wait(for: id) }
        return collector.seen.withLock { seen in ids.map { seen.outcomes[$0] ?? Outcome() } }
    }

    func waitForSettings(count: Int) async throws {
        for _ in 0..<100 where maxConcurrentStreamsSeen.count < count { try await Task.sleep(for: .milliseconds(20)) }
    }

    private func wait(for id: Int32) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finished = collector.seen.withLock { seen in
                if seen.finished.contains(id) { return true }
                seen.waiters[id] = continuation
                return false
            }
            if finished { continuation.resume() }
        }
    }

    func close() async throws { try await channel.close() }
}
