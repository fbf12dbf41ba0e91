import AsyncHTTPClient
import Crypto
import DigestTesting
import Foundation
import NIOCore
import NIOHTTP1
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
