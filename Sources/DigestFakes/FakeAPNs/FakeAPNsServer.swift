package import Crypto
import Foundation
import Synchronization

/// A fake Apple Push Notification service on loopback: HTTP/2 over TLS only (ALPN `h2`),
/// `POST /3/device/<token>` with a provider token (an ES256 JWT signed by the key it generates,
/// ``writeKey(to:)`` writes it as an Apple `.p8`), answered as Apple documents: 200 with an `apns-id`,
/// or a status with `{"reason":"…"}` (``APNsRequestRules``). It can inject errors, delays and dropped
/// connections (``Faults``). `GET /stats` answers ``Stats`` as JSON.
///
/// Its connections behave as APNs's: the first SETTINGS allow one stream at a time; after the first
/// request answered 200 on a connection (a valid provider token) a new SETTINGS raises that to
/// `maxConcurrentStreams`. A stream beyond what was advertised is reset with REFUSED_STREAM.
/// Connections stay open until the client closes them or ``goAway()``.
///
/// ```swift
/// let server = try await FakeAPNsServer.start()
/// try server.writeKey(to: dir.path("AuthKey.p8"))
/// // a client signs its JWTs with that key, kid server.keyID, iss server.teamID, and trusts
/// // server.certificatePath; it posts to server.url + "/3/device/<token>"
/// try await server.shutdown()
/// ```
package final class FakeAPNsServer: FakeHTTPService {
    /// Faults injected: each decided per request, after the request's own checks (a bad request is
    /// answered 400 or 403 whatever the faults). The tokens' own answers (``badDeviceTokens``,
    /// ``wrongEnvironment``, ``unregistered``) come before the random ones (drop, 429, 500, 503).
    @dynamicMemberLookup
    package struct Faults: FakeFaults, Sendable, Hashable, Codable {
        /// The delays, and the shares answered 429 `TooManyRequests`, 500 `InternalServerError` or 503
        /// `ServiceUnavailable`, or whose connection is closed without an answer.
        package var random = RandomFaults()
        /// These tokens are answered 400 `BadDeviceToken` (either case).
        package var badDeviceTokens: Set<String> = []
        /// Share of tokens (by a stable hash of the token) answered 400 `BadDeviceToken`.
        package var badDeviceTokenRate = 0.0
        /// Every token is answered 400 `BadDeviceToken`, as a production token sent to the sandbox (or
        /// the other way round) is.
        package var wrongEnvironment = false
        /// These tokens are answered 410 `Unregistered`, with the Unix time in milliseconds since when.
        package var unregistered: [String: Int64] = [:]
        /// Share of tokens (by the same stable hash, the range after ``badDeviceTokenRate``'s) answered
        /// 410 `Unregistered` since a day before the server's now.
        package var unregisteredRate = 0.0

        package init() {}
    }

    /// What the server saw.
    package typealias Stats = FakeStats

    /// One device token's acceptances.
    package struct Delivery: Sendable, Hashable {
        package var count: Int
        /// The last accepted request's `apns-*` headers (names lower-case: apns-topic, apns-push-type,
        /// apns-priority, apns-expiration, apns-collapse-id, apns-id), as sent.
        package var headers: [String: String]
        /// The last accepted request's payload.
        package var payload: [UInt8]
    }

    /// One connection's provider tokens: those it was allowed (with their `iat`) and the newest one's
    /// `iat`. Apple counts token updates per connection (an engineer's answers on the developer forums:
    /// changing the token on an open connection more often than every 20 minutes gets 429
    /// `TooManyProviderTokenUpdates`, and a new connection may land on another APNs host; clients such as
    /// aioapns sign a token per connection). Kept by the connection's handler, on its event loop.
    struct ConnectionTokens {
        var accepted: [String: Int64] = [:]
        var newestIssuedAt: Int64 = .min
    }

    private struct State {
        var faults: Faults
        var keys: [String: P256.Signing.PublicKey]
        /// Every JWT seen: its key id and `iat` when its signature verified, nil when not.
        var jwts: [String: APNsRequestRules.ProviderToken?] = [:]
        var deliveries: [String: Delivery] = [:]
        var messages: [SHA256Digest: Int] = [:]
        var stats = Stats()
    }

    package let keyID: String
    package let teamID: String
    package let topics: Set<String>
    /// The PEM certificate the server presents, which a client must trust (self-signed when generated).
    package let certificatePath: String
    private let privateKey: P256.Signing.PrivateKey
    private let state: Mutex<State>
    private let clock: @Sendable () -> Int64
    private let http: FakeHTTPServer

    private init(keyID: String, teamID: String, topics: Set<String>, faults: Faults, http: FakeHTTPServer, clock: @escaping @Sendable () -> Int64) {
        self.keyID = keyID
        self.teamID = teamID
        self.topics = topics
        self.certificatePath = http.tls?.certificatePath ?? ""
        self.http = http
        self.clock = clock
        let key = P256.Signing.PrivateKey()
        self.privateKey = key
        self.state = Mutex(State(faults: Self.normalized(faults), keys: [keyID: key.publicKey]))
    }

    /// Starts a server on `host:port` (0: any free port) with a new signing key. `tls`: the certificate
    /// and key to serve (its `applicationProtocols` are ignored: `h2` only); nil makes a self-signed
    /// one for 127.0.0.1 and localhost (``certificatePath``). `clock`: Unix seconds, for the provider
    /// tokens' ages and the `Unregistered` timestamps.
    package static func start(
        host: String = "127.0.0.1", port: Int = 0, tls: FakeFCMServer.TLS? = nil, keyID: String = "ABC123DEFG", teamID: String = "DEF123GHIJ",
        topics: Set<String> = ["com.example.digest"], faults: Faults = .init(), maxConcurrentStreams: Int = 1000,
        clock: @escaping @Sendable () -> Int64 = { FakeAPNsServer.wallClock() }
    ) async throws -> FakeAPNsServer {
        let http = try FakeHTTPServer(tls: tls, selfSignedName: "fake-apns")
        let server = FakeAPNsServer(keyID: keyID, teamID: teamID, topics: topics, faults: faults, http: http, clock: clock)
        try await http.listen(
            for: server, host: host, port: port,
            connections: .init(
                http1: false, streams: .oneUntilFirstSuccess(then: maxConcurrentStreams), dropClosesConnection: true, unindexedHeaders: ["apns-id"]))
        return server
    }

    /// Unix seconds now: the server's clock unless told otherwise.
    package static func wallClock() -> Int64 { Int64(Date().timeIntervalSince1970) }

    package var port: Int { http.port }

    /// `https://127.0.0.1:<port>`: requests go to `url + "/3/device/<token>"`.
    package var url: String { "https://127.0.0.1:\(port)" }

    /// The PEM of the certificate clients must trust.
    package var certificatePEM: String { (try? String(contentsOfFile: certificatePath, encoding: .utf8)) ?? "" }

    package func shutdown() async throws { try await http.shutdown() }

    // MARK: Keys

    /// The signing key as an Apple `.p8` file: PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    package var keyPEM: String { privateKey.pemRepresentation }

    /// Writes ``keyPEM`` to `path` (mode 0600).
    package func writeKey(to path: String) throws {
        try Data(keyPEM.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }

    /// Accepts provider tokens signed by `publicKey` under key id `id` too (the team id stays).
    package func addKey(id: String, publicKey: P256.Signing.PublicKey) {
        state.withLock { state in
            state.keys[id] = publicKey
            // Tokens that failed for want of this key may verify now.
            state.jwts = state.jwts.filter { $0.value != nil }
        }
    }

    // MARK: Control and observation

    /// Sends GOAWAY on every open connection: each answers the streams opened so far and no other,
    /// then closes.
    package func goAway() { http.goAway() }

    /// Changes the faults from now on.
    package func setFaults(_ faults: Faults) { state.withLock { $0.faults = Self.normalized(faults) } }

    package var stats: Stats { http.report(state.withLock { $0.stats }) }

    /// What `token` (either case) was accepted with, nil when never.
    package func deliveries(token: String) -> Delivery? { state.withLock { $0.deliveries[token.lowercased()] } }

    /// Tokens are compared lower-case.
    private static func normalized(_ faults: Faults) -> Faults {
        var faults = faults
        faults.badDeviceTokens = Set(faults.badDeviceTokens.map { $0.lowercased() })
        faults.unregistered = Dictionary(faults.unregistered.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        return faults
    }

    // MARK: Answers

    func newConnection() -> ConnectionTokens { ConnectionTokens() }

    /// Every request but `GET /stats` counts as in flight until answered.
    func counts(_ request: FakeRequest) -> Bool { !(request.method == "GET" && request.path == "/stats") }

    /// The answer to one request over a connection that took `tokens`.
    func reply(to request: FakeRequest, on tokens: inout ConnectionTokens) -> FakeReply {
        let (method, path, headers, body) = (request.method, request.path, request.headers, request.body)
        if path == "/stats" && method == "GET" {
            let data = (try? JSONEncoder().encode(stats)) ?? Data()
            return .answer(status: 200, headers: [("content-type", "application/json")], body: String(decoding: data, as: UTF8.self), delay: 0)
        }
        let now = clock()
        // The checks without state, then the provider token, then the rest, in that order of precedence.
        var failure = APNsRequestRules.checkRequestLine(method: method, path: path, headers: headers)
        var checked: APNsRequestRules.Checked?
        if failure == nil {
            failure = authenticate(headers.first { $0.0 == "authorization" }?.1, now: now, tokens: &tokens)
        }
        if failure == nil {
            switch APNsRequestRules.checkRequest(path: path, headers: headers, body: body, bodyLength: request.bodyLength, topics: topics) {
            case .success(let value): checked = value
            case .failure(let refusal): failure = refusal
            }
        }
        let apnsID = headers.first { $0.0 == "apns-id" }.map { $0.1 }.flatMap { APNsRequestRules.isUUID($0) ? $0 : nil }
            ?? UUID().uuidString.lowercased()
        var message: SHA256Digest?
        if let checked {
            var hash = SHA256()
            hash.update(data: Array(checked.token.utf8))
            hash.update(data: [0])
            hash.update(data: body)
            message = hash.finalize()
        }
        var random = SystemRandomNumberGenerator()
        let roll = Double.random(in: 0..<1, using: &random)

        return state.withLock { state -> FakeReply in
            state.stats.requests += 1
            let faults = state.faults
            let delay = faults.random.delay(using: &random)
            func error(_ status: Int, _ reason: String, timestamp: Int64? = nil) -> FakeReply {
                state.stats.answers["\(status) \(reason)", default: 0] += 1
                let body = timestamp.map { #"{"reason":"\#(reason)","timestamp":\#($0)}"# } ?? #"{"reason":"\#(reason)"}"#
                return .answer(status: status, headers: [("apns-id", apnsID), ("content-type", "application/json")], body: body, delay: delay)
            }
            if let failure { return error(failure.status, failure.reason) }
            guard let checked, let message else { return error(500, "InternalServerError") }
            let token = checked.token
            // The token's own answers.
            let share = Double(FakeFCMServer.stableHash(token) % 1_000_000) / 1_000_000
            if faults.wrongEnvironment || faults.badDeviceTokens.contains(token) || share < faults.badDeviceTokenRate {
                return error(400, "BadDeviceToken")
            }
            if let since = faults.unregistered[token] { return error(410, "Unregistered", timestamp: since) }
            if share >= faults.badDeviceTokenRate && share < faults.badDeviceTokenRate + faults.unregisteredRate {
                return error(410, "Unregistered", timestamp: now * 1000 - 86_400_000)
            }
            switch faults.random.fault(at: roll) {
            case .drop?:
                state.stats.answers["drop", default: 0] += 1
                return .drop(delay: delay)
            case .tooManyRequests?: return error(429, "TooManyRequests")
            case .internalError?: return error(500, "InternalServerError")
            case .unavailable?: return error(503, "ServiceUnavailable")
            case nil: break
            }

            var delivery = state.deliveries[token] ?? Delivery(count: 0, headers: [:], payload: [])
            delivery.count += 1
            delivery.headers = checked.apnsHeaders
            delivery.payload = body
            state.deliveries[token] = delivery
            if delivery.count == 1 { state.stats.delivered += 1 } else { state.stats.duplicates += 1 }
            let count = (state.messages[message] ?? 0) + 1
            state.messages[message] = count
            if count == 1 { state.stats.deliveredMessages += 1 } else { state.stats.duplicateMessages += 1 }
            state.stats.answers["200", default: 0] += 1
            return .answer(status: 200, headers: [("apns-id", apnsID)], body: "", delay: delay)
        }
    }

    /// The provider token's checks: `authorization: bearer <JWT>`, its signature, its age by the
    /// server's clock (at most 3,600 s old, at most 60 s ahead), and Apple's limit on token updates:
    /// on one connection, a new token whose `iat` is less than 20 minutes after the newest one taken is
    /// refused (429 `TooManyProviderTokenUpdates`) while the older one keeps working. A connection's
    /// tokens are checked against its own list first, then the server's cache of verified tokens, so a
    /// token is verified once.
    private func authenticate(_ authorization: String?, now: Int64, tokens: inout ConnectionTokens) -> APNsRequestRules.Failure? {
        guard let authorization else { return .init(403, "MissingProviderToken") }
        let scheme = authorization.prefix(7)
        guard scheme.count == 7, scheme.lowercased() == "bearer " else { return .init(403, "InvalidProviderToken") }
        let jwt = String(authorization.dropFirst(7).drop { $0 == " " })
        guard !jwt.isEmpty else { return .init(403, "MissingProviderToken") }
        if let issuedAt = tokens.accepted[jwt] { return Self.age(issuedAt, now: now) }
        enum Known {
            case cached(APNsRequestRules.ProviderToken?)
            case unverified([String: P256.Signing.PublicKey])
        }
        let known = state.withLock { state -> Known in
            guard let cached = state.jwts[jwt] else { return .unverified(state.keys) }
            return .cached(cached)
        }
        let verified: APNsRequestRules.ProviderToken?
        switch known {
        case .cached(let token):
            verified = token
        case .unverified(let keys):
            // Verified outside the lock (an ECDSA verification is the costliest step of a request).
            verified = APNsRequestRules.verify(jwt, keys: keys, teamID: teamID)
            state.withLock { state in
                if state.jwts.updateValue(verified, forKey: jwt) == nil { state.stats.providerTokens += 1 }
            }
        }
        guard let verified else { return .init(403, "InvalidProviderToken") }
        if let failure = Self.age(verified.issuedAt, now: now) { return failure }
        if tokens.newestIssuedAt != .min && verified.issuedAt - tokens.newestIssuedAt < 20 * 60 {
            return .init(429, "TooManyProviderTokenUpdates")
        }
        tokens.accepted[jwt] = verified.issuedAt
        tokens.newestIssuedAt = verified.issuedAt
        return nil
    }

    /// At most an hour old, at most a minute ahead (clocks differ a little).
    private static func age(_ issuedAt: Int64, now: Int64) -> APNsRequestRules.Failure? {
        guard issuedAt <= now + 60 else { return .init(403, "InvalidProviderToken") }
        guard now - issuedAt <= 3600 else { return .init(403, "ExpiredProviderToken") }
        return nil
    }
}
