import Crypto
import DigestCore
import Foundation
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
    @dynamicMemberLookup
    package struct Faults: FakeFaults, Sendable, Hashable, Codable {
        /// The delays, and the shares answered 429 `QUOTA_EXCEEDED` (as in a burst), 500 `INTERNAL` (no
        /// `Retry-After`) or 503 `UNAVAILABLE` (with `Retry-After: retryAfterSeconds`), or whose
        /// connection is closed without an answer, before anything is delivered.
        package var random = RandomFaults()
        /// `Retry-After` of the 503 answers, seconds.
        package var retryAfterSeconds = 1
        /// Send that `Retry-After` as an HTTP date (the server's now plus `retryAfterSeconds`).
        package var retryAfterAsDate = false
        /// Share of tokens (by a stable hash of the token) that are `UNREGISTERED`.
        package var unregisteredRate = 0.0
        /// These tokens are `UNREGISTERED` too.
        package var unregisteredTokens: Set<String>? = nil
        /// Every `quotaBurstEvery` seconds, `quotaBurstLength` seconds of 429 `QUOTA_EXCEEDED` (0: never).
        package var quotaBurstEvery = 0.0
        package var quotaBurstLength = 0.0
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
    package typealias Stats = FakeStats

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
    }

    package let projectID: String
    package let clientEmail = "digest-sender@digest-test.iam.gserviceaccount.com"
    package let keyID: String
    /// Lifetime of the access tokens it issues, seconds.
    package let tokenLifetime: Int
    private let privateKey: _RSA.Signing.PrivateKey
    private let state: Mutex<State>
    private let started = ContinuousClock.now
    private let http: FakeHTTPServer
    private let scheme: String

    private init(projectID: String, tokenLifetime: Int, faults: Faults, http: FakeHTTPServer) throws {
        self.scheme = http.tls == nil ? "http" : "https"
        self.http = http
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
        let http = try FakeHTTPServer(tls: tls, selfSignedName: nil)
        let server = try FakeFCMServer(projectID: projectID, tokenLifetime: tokenLifetime, faults: faults, http: http)
        try await http.listen(for: server, host: host, port: port, connections: .init(streams: .fixed(maxConcurrentStreams)))
        return server
    }

    package var port: Int { http.port }

    /// `http://127.0.0.1:<port>` (`https` with TLS): the sender's `--endpoint`.
    package var url: String { "\(scheme)://127.0.0.1:\(port)" }

    package func shutdown() async throws { try await http.shutdown() }

    /// Accepts `token` as a bearer token for `lifetime` seconds (load tools that cannot sign JWTs).
    package func registerAccessToken(_ token: String, lifetime: Int64 = 86_400) {
        let now = Int64(Date().timeIntervalSince1970)
        state.withLock { $0.accessTokens[token] = now + lifetime }
    }

    /// Sends GOAWAY on every open HTTP/2 connection: each answers the streams opened so far and no
    /// other, and the client must open a new connection for the rest.
    package func goAway() { http.goAway() }

    /// Changes the faults from now on.
    package func setFaults(_ faults: Faults) { state.withLock { $0.faults = faults } }

    package var stats: Stats { http.report(state.withLock { $0.stats }) }

    package var deliveries: [String: Delivery] { state.withLock { $0.deliveries } }

    /// Keeps the request body of every delivery from now on (a test that reads what arrived; the
    /// load tests keep none).
    package func keepBodies() { state.withLock { $0.bodies = $0.bodies ?? [:] } }

    /// The request bodies delivered to `token` since ``keepBodies()``, in order.
    package func bodies(for token: String) -> [String] { state.withLock { $0.bodies?[token] ?? [] } }

    /// Every message delivered, with how many times.
    package var messageDeliveries: [MessageDelivery] { state.withLock { Array($0.messages.values) } }

    /// `messages:send` requests received and not yet answered.
    package var inFlight: Int { http.inFlight }

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

    func reply(to request: FakeRequest, on _: inout Void) -> Reply {
        let (method, path) = (request.method, request.path)
        switch (method, path) {
        case ("POST", "/token"):
            return tokenReply(request.body)
        case ("POST", _) where Self.isSend(path):
            return sendReply(path: path, headers: request.headers, body: request.body, http2: request.http2)
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

    /// `messages:send` requests count as in flight until answered.
    func counts(_ request: FakeRequest) -> Bool { request.method == "POST" && Self.isSend(request.path) }

    private static func isSend(_ path: String) -> Bool { path.hasPrefix("/v1/projects/") && path.hasSuffix("/messages:send") }

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
        guard let jwt = CompactJWT(assertion) else { return "the assertion is not a JWT" }
        guard jwt.header.alg == "RS256" else { return "the JWT is not RS256" }
        if let kid = jwt.header.kid, kid != keyID { return "unknown key id" }
        let signature = _RSA.Signing.RSASignature(rawRepresentation: jwt.signature)
        guard privateKey.publicKey.isValidSignature(signature, for: jwt.signed, padding: .insecurePKCS1v1_5) else { return "Invalid JWT Signature." }
        guard let claims = (try? JSONSerialization.jsonObject(with: Data(jwt.claims))) as? [String: Any] else { return "bad claims" }
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
        let elapsed = (ContinuousClock.now - started).seconds
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
            let faults = state.faults
            let delay = faults.random.delay(using: &random)
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
            func quotaExceeded() -> Reply {
                Self.error(
                    429, status: "RESOURCE_EXHAUSTED", fcm: "QUOTA_EXCEEDED", message: "Quota exceeded for quota metric 'Send requests'",
                    extraHeaders: faults.quotaRetryAfterSeconds.map { [("Retry-After", String($0))] } ?? [], delay: delay)
            }
            switch faults.random.fault(at: roll) {
            case .drop?: return answer(.drop(delay: delay), "drop")
            case .tooManyRequests?: return answer(quotaExceeded(), "429")
            case .internalError?:
                return answer(Self.error(500, status: "INTERNAL", fcm: "INTERNAL", message: "Internal error encountered.", delay: delay), "500")
            case .unavailable?:
                let retryAfter = faults.retryAfterAsDate ? Self.httpDate(now + Int64(faults.retryAfterSeconds)) : String(faults.retryAfterSeconds)
                return answer(Self.error(503, status: "UNAVAILABLE", fcm: "UNAVAILABLE", message: "The service is currently unavailable.",
                                         extraHeaders: [("Retry-After", retryAfter)], delay: delay), "503")
            case nil: break
            }
            if faults.quotaBurstEvery > 0, elapsed.truncatingRemainder(dividingBy: faults.quotaBurstEvery) < faults.quotaBurstLength {
                return answer(quotaExceeded(), "429")
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
