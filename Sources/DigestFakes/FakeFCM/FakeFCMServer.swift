import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOSSL
import NIOPosix
import Synchronization
import _CryptoExtras

/// A fake Firebase Cloud Messaging HTTP v1 server on loopback: an OAuth token endpoint (`POST /token`,
/// JWT bearer assertions signed by its own generated service account) and
/// `POST /v1/projects/{project}/messages:send`, which checks every request against the v1 rules
/// (``FCMRequestRules``) and a bearer token it issued, and can inject errors, delays and dropped
/// connections. `GET /stats` answers ``Stats`` as JSON; `POST /goaway` sends GOAWAY on every HTTP/2
/// connection (``goAway()``).
///
/// Over TLS it speaks HTTP/2 as FCM does: at most `maxConcurrentStreams` streams a connection (FCM's
/// 100, advertised in SETTINGS), and each answer after the configured delay.
///
/// ```swift
/// let server = try await FakeFCMServer.start()
/// try server.writeServiceAccount(to: dir.path("sa.json"))
/// // digest send --credentials sa.json --endpoint server.url …
/// try await server.shutdown()
/// ```
package final class FakeFCMServer: FakeHTTPService {
    /// Faults injected into `messages:send`, each decided per request.
    package struct Faults: Sendable, Hashable, Codable {
        /// Share answered 503 `UNAVAILABLE` with `Retry-After: retryAfterSeconds`.
        package var unavailableRate = 0.0
        package var retryAfterSeconds = 1
        /// Send that `Retry-After` as an HTTP date (the server's now plus `retryAfterSeconds`).
        package var retryAfterAsDate = false
        /// Share answered 500 `INTERNAL` (no `Retry-After`).
        package var internalRate = 0.0
        /// Share whose connection is closed without an answer, before anything is delivered.
        package var dropRate = 0.0
        /// Share of tokens (by a stable hash of the token) that are `UNREGISTERED`.
        package var unregisteredRate = 0.0
        /// These tokens are `UNREGISTERED` too.
        package var unregisteredTokens: Set<String>? = nil
        /// Every `quotaBurstEvery` seconds, `quotaBurstLength` seconds of 429 `QUOTA_EXCEEDED` (0: never).
        package var quotaBurstEvery = 0.0
        package var quotaBurstLength = 0.0
        /// Each answer waits a random time in this range, milliseconds.
        package var minDelayMilliseconds = 0
        package var maxDelayMilliseconds = 0
        /// Every request answered 401 `THIRD_PARTY_AUTH_ERROR`.
        package var thirdPartyAuthError = false
        /// `Retry-After` of the 429 answers, seconds (nil: none, as FCM often sends).
        package var quotaRetryAfterSeconds: Int? = nil

        package init() {}
    }

    /// A certificate and key (PEM files) to serve HTTPS with; ALPN offers `applicationProtocols`.
    package struct TLS: Sendable, Hashable {
        package var certificatePath: String
        package var privateKeyPath: String
        /// `h2` and `http/1.1` by default; without `h2` the server speaks HTTP/1.1 only.
        package var applicationProtocols: [String]
        package init(certificatePath: String, privateKeyPath: String, applicationProtocols: [String] = ["h2", "http/1.1"]) {
            self.certificatePath = certificatePath
            self.privateKeyPath = privateKeyPath
            self.applicationProtocols = applicationProtocols
        }
    }

    /// What the server saw.
    package struct Stats: Sendable, Hashable, Codable {
        /// `messages:send` requests received.
        package var requests = 0
        /// Answers by kind: `200`, `503`, `429`, `500`, `404`, `400`, `401`, `drop`.
        package var answers: [String: Int] = [:]
        /// Distinct tokens delivered (200, not a dry run).
        package var delivered = 0
        /// Deliveries beyond the first per token.
        package var duplicates = 0
        /// Distinct messages delivered (200, not a dry run): a message is its request body
        /// (``messageDeliveries``).
        package var deliveredMessages = 0
        /// Deliveries of a message beyond its first: the same body accepted again.
        package var duplicateMessages = 0
        /// Dry-run requests accepted.
        package var validated = 0
        /// Access tokens issued.
        package var accessTokens = 0
        /// Most `messages:send` requests waiting for an answer at once.
        package var maxInFlight = 0
        /// `messages:send` requests that came over HTTP/2.
        package var http2Requests = 0
        /// HTTP/2 connections opened.
        package var http2Connections = 0
        /// Most HTTP/2 connections open at once.
        package var maxHTTP2Connections = 0
        /// GOAWAY frames sent.
        package var goAways = 0
    }

    /// One token's deliveries.
    package struct Delivery: Sendable, Hashable {
        package var count: Int
        /// The collapse key each delivery carried.
        package var collapseKeys: [String?]
    }

    /// One message's deliveries. A message is identified by its request body: a sender posts an
    /// outbox row's `message` as it is, so sending it again repeats the same bytes, while two messages
    /// to one token (two weeks' digests) differ.
    package struct MessageDelivery: Sendable, Hashable {
        package var token: String
        package var count: Int
    }

    private struct State {
        var faults: Faults
        var accessTokens: [String: Int64] = [:]
        var deliveries: [String: Delivery] = [:]
        var messages: [SHA256Digest: MessageDelivery] = [:]
        /// Each token's delivered request bodies, once ``keepBodies()`` asked for them.
        var bodies: [String: [String]]?
        var stats = Stats()
        var inFlight = 0
        /// The open HTTP/2 connections: each one's way to send GOAWAY.
        var connections: [ObjectIdentifier: @Sendable () -> Void] = [:]
    }

    package let projectID: String
    package let clientEmail = "digest-sender@digest-test.iam.gserviceaccount.com"
    package let keyID: String
    /// Lifetime of the access tokens it issues, seconds.
    package let tokenLifetime: Int
    private let privateKey: _RSA.Signing.PrivateKey
    private let state: Mutex<State>
    private let started = ContinuousClock.now
    private let channel: Mutex<(any Channel)?> = Mutex(nil)
    private let boundPort = Atomic<Int>(0)
    private let scheme: String

    private init(projectID: String, tokenLifetime: Int, faults: Faults, https: Bool) throws {
        self.scheme = https ? "https" : "http"
        self.projectID = projectID
        self.tokenLifetime = tokenLifetime
        self.privateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        self.keyID = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        self.state = Mutex(State(faults: faults))
    }

    /// Starts a server on `host:port` (0: any free port) with a new service-account key.
    /// `maxConcurrentStreams`: the SETTINGS_MAX_CONCURRENT_STREAMS of its HTTP/2 connections (FCM's: 100).
    package static func start(
        host: String = "127.0.0.1", port: Int = 0, projectID: String = "digest-test", tokenLifetime: Int = 3600,
        faults: Faults = Faults(), tls: TLS? = nil, maxConcurrentStreams: Int = 100
    ) async throws -> FakeFCMServer {
        let server = try FakeFCMServer(projectID: projectID, tokenLifetime: tokenLifetime, faults: faults, https: tls != nil)
        let sslContext = try tls.map { tls in
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(tls.certificatePath).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: tls.privateKeyPath, format: .pem)))
            configuration.applicationProtocols = tls.applicationProtocols
            return try NIOSSLContext(configuration: configuration)
        }
        let channel = try await FakeHTTPBootstrap.bind(server, host: host, port: port, sslContext: sslContext, maxConcurrentStreams: maxConcurrentStreams)
        server.channel.withLock { $0 = channel }
        server.boundPort.store(channel.localAddress?.port ?? port, ordering: .releasing)
        return server
    }

    package var port: Int { boundPort.load(ordering: .acquiring) }

    /// `http://127.0.0.1:<port>` (`https` with TLS): the sender's `--endpoint`.
    package var url: String { "\(scheme)://127.0.0.1:\(port)" }

    package func shutdown() async throws {
        let channel = self.channel.withLock { $0 }
        try await channel?.close()
    }

    /// Accepts `token` as a bearer token for `lifetime` seconds (load tools that cannot sign JWTs).
    package func registerAccessToken(_ token: String, lifetime: Int64 = 86_400) {
        let now = Int64(Date().timeIntervalSince1970)
        state.withLock { $0.accessTokens[token] = now + lifetime }
    }

    /// Sends GOAWAY on every open HTTP/2 connection: each answers the streams opened so far and no
    /// other, and the client must open a new connection for the rest.
    package func goAway() {
        for send in state.withLock({ Array($0.connections.values) }) { send() }
    }

    func connectionOpened(_ id: ObjectIdentifier, goAway: @escaping @Sendable () -> Void) {
        state.withLock { state in
            state.connections[id] = goAway
            state.stats.http2Connections += 1
            state.stats.maxHTTP2Connections = max(state.stats.maxHTTP2Connections, state.connections.count)
        }
    }

    func connectionClosed(_ id: ObjectIdentifier) { _ = state.withLock { $0.connections.removeValue(forKey: id) } }

    func countGoAway() { state.withLock { $0.stats.goAways += 1 } }

    /// Changes the faults from now on.
    package func setFaults(_ faults: Faults) { state.withLock { $0.faults = faults } }

    package var stats: Stats { state.withLock { $0.stats } }

    package var deliveries: [String: Delivery] { state.withLock { $0.deliveries } }

    /// Keeps the request body of every delivery from now on (a test that reads what arrived; the
    /// load tests keep none).
    package func keepBodies() { state.withLock { $0.bodies = $0.bodies ?? [:] } }

    /// The request bodies delivered to `token` since ``keepBodies()``, in order.
    package func bodies(for token: String) -> [String] { state.withLock { $0.bodies?[token] ?? [] } }

    /// Every message delivered, with how many times.
    package var messageDeliveries: [MessageDelivery] { state.withLock { Array($0.messages.values) } }

    /// `messages:send` requests received and not yet answered.
    package var inFlight: Int { state.withLock { $0.inFlight } }

    /// The service-account JSON for this server: its key, project and token endpoint.
    package func serviceAccountJSON() -> String {
        let fields: [String: String] = [
            "type": "service_account", "project_id": projectID, "private_key_id": keyID,
            "private_key": privateKey.pkcs8PEMRepresentation, "client_email": clientEmail,
            "client_id": "100000000000000000000", "token_uri": "\(url)/token",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        ]
        let data = try! JSONSerialization.data(withJSONObject: fields, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    /// Writes ``serviceAccountJSON()`` to `path` (mode 0600: it holds a private key).
    package func writeServiceAccount(to path: String) throws {
        try Data(serviceAccountJSON().utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }

    // MARK: Answers

    typealias Reply = FakeReply

    func reply(method: String, path: String, headers: [(String, String)], body: [UInt8], http2: Bool = false) -> Reply {
        switch (method, path) {
        case ("POST", "/token"):
            return tokenReply(body)
        case ("POST", _) where path.hasPrefix("/v1/projects/") && path.hasSuffix("/messages:send"):
            return sendReply(path: path, headers: headers, body: body, http2: http2)
        case ("POST", "/goaway"):
            goAway()
            return .answer(status: 200, headers: [("Content-Type", "application/json")], body: "{}", delay: 0)
        case ("GET", "/stats"):
            let data = (try? JSONEncoder().encode(stats)) ?? Data()
            return .answer(status: 200, headers: [("Content-Type", "application/json")], body: String(decoding: data, as: UTF8.self), delay: 0)
        default:
            return Self.error(404, status: "NOT_FOUND", message: "no such endpoint: \(method) \(path)")
        }
    }

    func answered() { state.withLock { $0.inFlight -= 1 } }

    /// `messages:send` requests count as in flight until answered.
    func counts(path: String) -> Bool { path.hasSuffix("/messages:send") }

    private func tokenReply(_ body: [UInt8]) -> Reply {
        let form = Self.form(String(decoding: body, as: UTF8.self))
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", let assertion = form["assertion"] else {
            return Self.oauthError("unsupported_grant_type", "grant_type must be urn:ietf:params:oauth:grant-type:jwt-bearer")
        }
        if let problem = verify(assertion) { return Self.oauthError("invalid_grant", problem) }
        let token = "ya29.fake-" + UUID().uuidString.lowercased()
        let now = Int64(Date().timeIntervalSince1970)
        state.withLock { state in
            state.accessTokens[token] = now + Int64(tokenLifetime)
            state.stats.accessTokens += 1
        }
        let json = #"{"access_token":"\#(token)","expires_in":\#(tokenLifetime),"token_type":"Bearer"}"#
        return .answer(status: 200, headers: [("Content-Type", "application/json")], body: json, delay: 0)
    }

    /// Checks a JWT bearer assertion: RS256 by this server's key, issuer, audience, scope, times.
    private func verify(_ assertion: String) -> String? {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Self.base64URL(parts[0]), let claimBytes = Self.base64URL(parts[1]),
              let signature = Self.base64URL(parts[2]) else { return "the assertion is not a JWT" }
        guard let header = (try? JSONSerialization.jsonObject(with: Data(headerBytes))) as? [String: Any],
              header["alg"] as? String == "RS256" else { return "the JWT is not RS256" }
        if let kid = header["kid"] as? String, kid != keyID { return "unknown key id" }
        let signed = Array("\(parts[0]).\(parts[1])".utf8)
        guard privateKey.publicKey.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: signed, padding: .insecurePKCS1v1_5)
        else { return "Invalid JWT Signature." }
        guard let claims = (try? JSONSerialization.jsonObject(with: Data(claimBytes))) as? [String: Any] else { return "bad claims" }
        let now = Int64(Date().timeIntervalSince1970)
        guard claims["iss"] as? String == clientEmail else { return "Invalid issuer" }
        // Google's token endpoint takes its own URL as the audience (Google's libraries use it whatever
        // the key file's token_uri says) and any scope that covers FCM: firebase.messaging (ours) or
        // cloud-platform (the Firebase Admin SDKs).
        guard let audience = claims["aud"] as? String, [Self.googleTokenURL, "\(url)/token"].contains(audience) else { return "Invalid audience" }
        guard let scopes = (claims["scope"] as? String)?.split(separator: " "), scopes.contains(where: Self.fcmScopes.contains)
        else { return "Invalid scope" }
        guard let iat = (claims["iat"] as? NSNumber)?.int64Value, let exp = (claims["exp"] as? NSNumber)?.int64Value,
              iat <= now + 60, exp > now, exp - iat <= 3600 else { return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe" }
        return nil
    }

    private func sendReply(path: String, headers: [(String, String)], body: [UInt8], http2: Bool) -> Reply {
        let now = Int64(Date().timeIntervalSince1970)
        let (wholeSeconds, attoseconds) = (ContinuousClock.now - started).components
        let elapsed = Double(wholeSeconds) + Double(attoseconds) / 1e18
        let bearer = headers.first { HeaderName.folded($0.0) == "authorization" }?.1
        let project = path.dropFirst("/v1/projects/".count).dropLast("/messages:send".count)
        var random = SystemRandomNumberGenerator()
        let roll = Double.random(in: 0..<1, using: &random)
        // The rules are pure: check them outside the lock, so both event loops parse at once.
        let checked = FCMRequestRules.check(body)
        let message: SHA256Digest? = if case .success(let accepted) = checked, !accepted.validateOnly { SHA256.hash(data: body) } else { nil }

        return state.withLock { state -> Reply in
            state.stats.requests += 1
            if http2 { state.stats.http2Requests += 1 }
            state.inFlight += 1
            state.stats.maxInFlight = max(state.stats.maxInFlight, state.inFlight)
            let faults = state.faults
            let delay = faults.maxDelayMilliseconds > faults.minDelayMilliseconds
                ? Int.random(in: faults.minDelayMilliseconds...faults.maxDelayMilliseconds, using: &random) : faults.minDelayMilliseconds
            func answer(_ reply: Reply, _ kind: String) -> Reply {
                state.stats.answers[kind, default: 0] += 1
                return reply
            }
            guard let bearer, bearer.hasPrefix("Bearer "), let expiry = state.accessTokens[String(bearer.dropFirst(7))], expiry > now else {
                return answer(Self.error(401, status: "UNAUTHENTICATED", message: "Request had invalid authentication credentials.", delay: delay), "401")
            }
            guard project == projectID else {
                return answer(Self.error(403, status: "PERMISSION_DENIED", message: "Permission 'cloudmessaging.messages.create' denied on project \(project)", delay: delay), "403")
            }
            if faults.thirdPartyAuthError {
                return answer(Self.error(401, status: "UNAUTHENTICATED", fcm: "THIRD_PARTY_AUTH_ERROR", message: "Auth error from APNS or Web Push Service", delay: delay), "401")
            }
            // Faults first: an overloaded or dropping FCM delivers nothing.
            if roll < faults.dropRate { return answer(.drop(delay: delay), "drop") }
            var threshold = faults.dropRate + faults.unavailableRate
            if roll < threshold {
                let retryAfter = faults.retryAfterAsDate ? Self.httpDate(now + Int64(faults.retryAfterSeconds)) : String(faults.retryAfterSeconds)
                return answer(Self.error(503, status: "UNAVAILABLE", fcm: "UNAVAILABLE", message: "The service is currently unavailable.",
                                         extraHeaders: [("Retry-After", retryAfter)], delay: delay), "503")
            }
            threshold += faults.internalRate
            if roll < threshold {
                return answer(Self.error(500, status: "INTERNAL", fcm: "INTERNAL", message: "Internal error encountered.", delay: delay), "500")
            }
            if faults.quotaBurstEvery > 0, elapsed.truncatingRemainder(dividingBy: faults.quotaBurstEvery) < faults.quotaBurstLength {
                return answer(Self.error(429, status: "RESOURCE_EXHAUSTED", fcm: "QUOTA_EXCEEDED", message: "Quota exceeded for quota metric 'Send requests'",
                                         extraHeaders: faults.quotaRetryAfterSeconds.map { [("Retry-After", String($0))] } ?? [], delay: delay), "429")
            }
            let accepted: FCMRequestRules.Accepted
            switch checked {
            case .failure(let violation):
                return answer(Self.error(400, status: "INVALID_ARGUMENT", fcm: "INVALID_ARGUMENT", message: violation.message, delay: delay), "400")
            case .success(let value):
                accepted = value
            }
            if faults.unregisteredTokens?.contains(accepted.token) == true
                || (faults.unregisteredRate > 0 && Double(Self.stableHash(accepted.token) % 1_000_000) / 1_000_000 < faults.unregisteredRate)
            {
                return answer(Self.error(404, status: "NOT_FOUND", fcm: "UNREGISTERED", message: "Requested entity was not found.", delay: delay), "404")
            }
            if accepted.validateOnly {
                state.stats.validated += 1
                return answer(.answer(status: 200, headers: [("Content-Type", "application/json")],
                                      body: #"{"name":"projects/\#(projectID)/messages/fake_message_id"}"#, delay: delay), "200")
            }
            var delivery = state.deliveries[accepted.token] ?? Delivery(count: 0, collapseKeys: [])
            delivery.count += 1
            delivery.collapseKeys.append(accepted.collapseKey)
            state.deliveries[accepted.token] = delivery
            if state.bodies != nil { state.bodies?[accepted.token, default: []].append(String(decoding: body, as: UTF8.self)) }
            if delivery.count == 1 { state.stats.delivered += 1 } else { state.stats.duplicates += 1 }
            if let message {
                let count = (state.messages[message]?.count ?? 0) + 1
                state.messages[message] = MessageDelivery(token: accepted.token, count: count)
                if count == 1 { state.stats.deliveredMessages += 1 } else { state.stats.duplicateMessages += 1 }
            }
            let name = "projects/\(projectID)/messages/0:\(state.stats.requests)%\(keyID.prefix(8))"
            return answer(.answer(status: 200, headers: [("Content-Type", "application/json")], body: #"{"name":"\#(name)"}"#, delay: delay), "200")
        }
    }

    // MARK: Helpers

    static let googleTokenURL = "https://oauth2.googleapis.com/token"
    static let fcmScopes: Set<Substring> = ["https://www.googleapis.com/auth/firebase.messaging", "https://www.googleapis.com/auth/cloud-platform"]

    static func error(_ code: Int, status: String, fcm: String? = nil, message: String,
                      extraHeaders: [(String, String)] = [], delay: Int = 0) -> Reply {
        let details = fcm.map { #","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#($0)"}]"# } ?? ""
        let quoted = String(decoding: try! JSONSerialization.data(withJSONObject: [message], options: [.withoutEscapingSlashes]), as: UTF8.self).dropFirst().dropLast()
        let body = #"{"error":{"code":\#(code),"message":\#(quoted),"status":"\#(status)"\#(details)}}"#
        return .answer(status: code, headers: [("Content-Type", "application/json")] + extraHeaders, body: body, delay: delay)
    }

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) for Unix second `seconds`.
    static func httpDate(_ seconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    static func oauthError(_ error: String, _ description: String) -> Reply {
        .answer(status: 400, headers: [("Content-Type", "application/json")],
                body: #"{"error":"\#(error)","error_description":"\#(description)"}"#, delay: 0)
    }

    static func form(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0) }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return fields
    }

    static func base64URL(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }

    /// FNV-1a: the same token is unregistered in every run.
    static func stableHash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return hash
    }
}
