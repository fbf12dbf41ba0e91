package import Crypto
import DigestCore
import Foundation
import Synchronization

/// A fake Web Push service (RFC 8030) on loopback over TLS: HTTP/2 or, when told (or when the client
/// offers nothing else), HTTP/1.1. It knows its subscriptions (``Subscriber``: the browser's key
/// pair and auth secret, and the VAPID key it was made with), takes `POST /push/<id>` and checks the
/// request as a push service does: `Content-Encoding: aes128gcm`, `TTL`, `Urgency`, `Topic`, the
/// VAPID `Authorization` (an ES256 JWT verified with its `k`, `aud` this server's origin, `exp`
/// within 24 hours, `sub` a `mailto:` or `https:` contact), the body's size; then it decrypts the
/// body with the subscription's keys (every request, or one in ``Faults/decryptEvery``) and keeps
/// the plaintext. Answers: 201 with a `Location`, 400 malformed, 401 a bad token, 403 a key other than
/// the subscription's, 404 unknown, 410 gone, 413 too large, and injected 429 (`Retry-After`), 500,
/// 503, delays and drops (``Faults``). `GET /stats` answers ``Stats`` as JSON.
///
/// ```swift
/// let server = try await FakeWebPushServer.start()
/// let subscriber = server.subscribe(id: "ana")   // the PushSubscription a browser would give
/// // post to subscriber.endpoint, trusting server.certificatePath
/// try await server.shutdown()
/// ```
package final class FakeWebPushServer: FakeHTTPService {
    /// Faults injected, decided per request after its own checks (a bad request is answered 400, 401
    /// or 403 whatever the faults).
    @dynamicMemberLookup
    package struct Faults: FakeFaults, Sendable, Hashable, Codable {
        /// The delays, and the shares answered 429 (with `Retry-After: 1`), 500 or 503, or dropped without
        /// an answer (HTTP/2: the stream reset; HTTP/1.1: the connection closed).
        package var random = RandomFaults()
        /// Decrypt one request in this many (1: every one). Undecrypted requests are accepted unread.
        package var decryptEvery = 1

        package init() {}
    }

    /// What the server saw.
    package typealias Stats = FakeStats

    /// A browser's push subscription at this service.
    package struct Subscriber: Sendable {
        package let id: String
        /// The browser's key pair (`p256dh` is its public key) and auth secret.
        package let privateKey: P256.KeyAgreement.PrivateKey
        package let auth: [UInt8]
        /// The VAPID public key (base64url) the subscription was made with (`applicationServerKey`);
        /// nil: any key is accepted.
        package let applicationServerKey: String?
        /// The subscription's endpoint URL.
        package let endpoint: String

        package init(id: String, privateKey: P256.KeyAgreement.PrivateKey, auth: [UInt8], applicationServerKey: String?, endpoint: String) {
            self.id = id
            self.privateKey = privateKey
            self.auth = auth
            self.applicationServerKey = applicationServerKey
            self.endpoint = endpoint
        }

        /// `keys.p256dh` and `keys.auth`, base64url as a browser gives them.
        package var p256dh: String { Base64URL.encode(Array(privateKey.publicKey.x963Representation)) }
        package var authBase64URL: String { Base64URL.encode(auth) }

        /// `PushSubscription.toJSON()`.
        package var json: String {
            #"{"endpoint":"\#(endpoint)","expirationTime":null,"keys":{"p256dh":"\#(p256dh)","auth":"\#(authBase64URL)"}}"#
        }
    }

    /// One subscription's acceptances.
    package struct Delivery: Sendable, Hashable {
        package var count = 0
        /// The last accepted request's `ttl`, `urgency` and `topic` headers (absent ones left out).
        package var headers: [String: String] = [:]
        /// The last decrypted plaintext (nil: none decrypted yet).
        package var plaintext: [UInt8]?
    }

    private struct State {
        var faults: Faults
        var subscribers: [String: Subscriber] = [:]
        var gone: Set<String> = []
        var deliveries: [String: Delivery] = [:]
        /// Decrypted messages' ids, with their acceptances.
        var messageIDs: [String: Int] = [:]
        /// Verified VAPID tokens with their `exp`, and tokens that failed (nil).
        var tokens: [String: Int64?] = [:]
        /// `Authorization` values already read: their key and their token's `exp` (nil: it did not verify).
        var authorizations: [String: (key: String, expires: Int64?)] = [:]
        var stats = Stats()
        var sequence = 0
        var lookup: (@Sendable (String) -> Keys?)?
    }

    /// The PEM certificate the server presents, which a client must trust (self-signed when generated).
    package let certificatePath: String
    private let state: Mutex<State>
    private let clock: @Sendable () -> Int64
    private let http: FakeHTTPServer
    /// The host in the endpoints and the VAPID `aud` (`127.0.0.1` unless started otherwise).
    private let host: String

    private init(host: String, faults: Faults, http: FakeHTTPServer, clock: @escaping @Sendable () -> Int64) {
        self.host = host
        self.certificatePath = http.tls?.certificatePath ?? ""
        self.http = http
        self.clock = clock
        self.state = Mutex(State(faults: faults))
    }

    /// Starts a server on `host:port` (0: any free port). `tls`: the certificate and key to serve, with
    /// the ALPN protocols to offer (`["http/1.1"]`: a service without HTTP/2); nil makes a self-signed
    /// one for 127.0.0.1 and localhost offering `h2` and `http/1.1`. `clock`: Unix seconds, for the
    /// tokens' `exp`.
    package static func start(
        host: String = "127.0.0.1", port: Int = 0, tls: FakeFCMServer.TLS? = nil, http1Only: Bool = false, faults: Faults = .init(),
        maxConcurrentStreams: Int = 1000, clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) async throws -> FakeWebPushServer {
        let http = try FakeHTTPServer(tls: tls, selfSignedName: "fake-webpush")
        let server = FakeWebPushServer(host: host, faults: faults, http: http, clock: clock)
        try await http.listen(for: server, host: host, port: port, connections: .init(http2: !http1Only, streams: .fixed(maxConcurrentStreams)))
        return server
    }

    package var port: Int { http.port }

    /// The origin: `https://127.0.0.1:<port>`, the VAPID `aud` it expects.
    package var origin: String { "https://\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    package func shutdown() async throws { try await http.shutdown() }

    // MARK: Subscriptions

    /// A new subscription `id` (a fresh key pair and auth secret), made with `applicationServerKey`
    /// (nil: any VAPID key is accepted for it).
    @discardableResult
    package func subscribe(id: String, applicationServerKey: String? = nil) -> Subscriber {
        var random = SystemRandomNumberGenerator()
        let auth = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
        return add(Subscriber(id: id, privateKey: P256.KeyAgreement.PrivateKey(), auth: auth, applicationServerKey: applicationServerKey, endpoint: endpoint(id)))
    }

    /// Registers a subscription made elsewhere (its endpoint becomes this server's `/push/<id>`).
    @discardableResult
    package func add(_ subscriber: Subscriber) -> Subscriber {
        let made = Subscriber(
            id: subscriber.id, privateKey: subscriber.privateKey, auth: subscriber.auth, applicationServerKey: subscriber.applicationServerKey,
            endpoint: endpoint(subscriber.id))
        state.withLock { $0.subscribers[subscriber.id] = made }
        return made
    }

    /// `origin/push/<id>`.
    package func endpoint(_ id: String) -> String { "\(origin)/push/\(id)" }

    /// A subscription's keys, made when a request to it is decrypted.
    package typealias Keys = @Sendable () -> (privateKey: P256.KeyAgreement.PrivateKey, auth: [UInt8])

    /// Subscriptions not registered are asked of `lookup` by id (the demo's subscribers, whose keys
    /// are drawn from their id): the way to make their keys, or nil for an unknown id (404). The keys
    /// are made only for the requests decrypted.
    package func lookUpOthers(_ lookup: @escaping @Sendable (String) -> Keys?) {
        state.withLock { $0.lookup = lookup }
    }

    /// The subscription is gone from now on: its requests are answered 410.
    package func unsubscribe(_ id: String) { _ = state.withLock { $0.gone.insert(id) } }

    // MARK: Control and observation

    package func setFaults(_ faults: Faults) { state.withLock { $0.faults = faults } }

    package var stats: Stats { http.report(state.withLock { $0.stats }) }

    /// What subscription `id` was accepted with, nil when never.
    package func deliveries(_ id: String) -> Delivery? { state.withLock { $0.deliveries[id] } }

    /// Sends GOAWAY on every open HTTP/2 connection.
    package func goAway() { http.goAway() }

    // MARK: FakeHTTPService

    /// Push requests count as in flight until answered.
    func counts(_ request: FakeRequest) -> Bool { request.method == "POST" && request.path.hasPrefix("/push/") }

    func reply(to request: FakeRequest, on _: inout Void) -> FakeReply {
        let (method, path, headers, body, http2) = (request.method, request.path, request.headers, request.body, request.http2)
        if method == "GET" && path == "/stats" {
            let data = (try? JSONEncoder().encode(stats)) ?? Data()
            return .answer(status: 200, headers: [("content-type", "application/json")], body: String(decoding: data, as: UTF8.self), delay: 0)
        }
        guard method == "POST", path.hasPrefix("/push/") else {
            return .answer(status: 404, headers: [], body: "no such resource", delay: 0)
        }
        return push(id: String(path.dropFirst("/push/".count)), headers: headers, body: body, http2: http2)
    }

    /// One push request: its checks in order (malformed 400, token 401, size 413, unknown 404, gone
    /// 410, key 403), then the faults, then the decryption and acceptance.
    private func push(id: String, headers: [(String, String)], body: [UInt8], http2: Bool) -> FakeReply {
        let now = clock()
        func header(_ name: String) -> String? { headers.first { HeaderName.folded($0.0) == name }?.1 }
        var refusal: (Int, String)? = WebPushRequestRules.check(
            contentEncoding: header("content-encoding"), ttl: header("ttl"), urgency: header("urgency"), topic: header("topic"))
        var vapidKey: String?
        if refusal == nil {
            switch verify(header("authorization"), now: now) {
            case .success(let key): vapidKey = key
            case .failure(let failure): refusal = (401, failure.reason)
            }
        }
        if refusal == nil && body.count > 4096 { refusal = (413, "the body is \(body.count) bytes: at most 4096") }
        var random = SystemRandomNumberGenerator()
        let roll = Double.random(in: 0..<1, using: &random)
        let ttl = header("ttl"), urgency = header("urgency"), topic = header("topic")

        // The state's part: which subscription, the faults, whether to decrypt.
        enum Step { case answer(FakeReply), decrypt(Keys, delay: Int, sequence: Int), accept(delay: Int, sequence: Int) }
        let step = state.withLock { state -> Step in
            state.stats.requests += 1
            if http2 { state.stats.http2Requests += 1 }
            let faults = state.faults
            let delay = faults.random.delay(using: &random)
            func answer(_ status: Int, _ text: String, headers: [(String, String)] = []) -> Step {
                state.stats.answers["\(status)", default: 0] += 1
                return .answer(.answer(status: status, headers: headers + [("content-type", "text/plain")], body: text, delay: delay))
            }
            if let refusal { return answer(refusal.0, refusal.1) }
            // A registered subscription, else one `lookup` knows, else "*" (every id not registered: a
            // benchmark's subscriptions sharing one key pair).
            let keys: Keys
            var madeWith: String?
            if let registered = state.subscribers[id] {
                keys = { (registered.privateKey, registered.auth) }
                madeWith = registered.applicationServerKey
            } else if let looked = state.lookup?(id) {
                keys = looked
            } else if let any = state.subscribers["*"] {
                keys = { (any.privateKey, any.auth) }
                madeWith = any.applicationServerKey
            } else {
                return answer(404, "no such subscription")
            }
            if state.gone.contains(id) { return answer(410, "the subscription has expired or was unsubscribed") }
            if let madeWith, madeWith != vapidKey {
                return answer(403, "the VAPID key does not match the subscription's applicationServerKey")
            }
            switch faults.random.fault(at: roll) {
            case .drop?:
                state.stats.answers["drop", default: 0] += 1
                return .answer(.drop(delay: delay))
            case .tooManyRequests?: return answer(429, "slow down", headers: [("retry-after", "1")])
            case .internalError?: return answer(500, "internal error")
            case .unavailable?: return answer(503, "unavailable")
            case nil: break
            }
            state.sequence += 1
            let sequence = state.sequence
            return sequence % max(1, faults.decryptEvery) == 0
                ? .decrypt(keys, delay: delay, sequence: sequence) : .accept(delay: delay, sequence: sequence)
        }
        var plaintext: [UInt8]?
        let delay: Int, sequence: Int
        switch step {
        case .answer(let reply): return reply
        case .accept(let drawn, let number): (delay, sequence) = (drawn, number)
        case .decrypt(let keys, let drawn, let number):
            (delay, sequence) = (drawn, number)
            // Decrypted outside the lock (a key agreement and two HKDFs).
            let (privateKey, auth) = keys()
            do {
                plaintext = try WebPushDecryption.decrypt(body, privateKey: privateKey, auth: auth)
            } catch {
                return finish(400, "the body does not decrypt: \(error.reason)", delay: delay)
            }
            if let plaintext, let violation = Self.digestKeysViolation(plaintext) { return finish(400, violation, delay: delay) }
        }
        let messageID = plaintext.flatMap(Self.messageID)
        return state.withLock { state -> FakeReply in
            var delivery = state.deliveries[id] ?? Delivery()
            delivery.count += 1
            delivery.headers = [("ttl", ttl), ("urgency", urgency), ("topic", topic)].reduce(into: [:]) { $0[$1.0] = $1.1 }
            if let plaintext {
                delivery.plaintext = plaintext
                state.stats.decrypted += 1
            }
            state.deliveries[id] = delivery
            if delivery.count == 1 { state.stats.delivered += 1 } else { state.stats.repeats += 1 }
            if let messageID {
                let count = (state.messageIDs[messageID] ?? 0) + 1
                state.messageIDs[messageID] = count
                if count > 1 { state.stats.duplicateMessages += 1 }
            }
            state.stats.answers["201", default: 0] += 1
            return .answer(status: 201, headers: [("location", "\(origin)/m/\(id)-\(sequence)")], body: "", delay: delay)
        }
    }

    /// An answer counted after the state's first part (the decryption's failure).
    private func finish(_ status: Int, _ text: String, delay: Int) -> FakeReply {
        state.withLock { $0.stats.answers["\(status)", default: 0] += 1 }
        return .answer(status: status, headers: [("content-type", "text/plain")], body: text, delay: delay)
    }

    /// What is wrong with a decrypted digest's own keys (``DigestKeyRules``): more than two buttons, a
    /// `reply_key` that is not 22 base64url characters; nil when nothing is (or it is no JSON object).
    static func digestKeysViolation(_ plaintext: [UInt8]) -> String? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(plaintext))) as? [String: Any] else { return nil }
        if let actions = object["actions"] as? [Any], actions.count > DigestKeyRules.maxWebActions {
            return "the notification has \(actions.count) actions; browsers show \(DigestKeyRules.maxWebActions)"
        }
        if let key = object["reply_key"], !((key as? String).map(DigestKeyRules.isReplyKey) ?? false) {
            return "reply_key is not \(DigestKeyRules.replyKeyLength) base64url characters"
        }
        return nil
    }

    /// The plaintext's `message_id` string, if it is a JSON object with one.
    static func messageID(_ plaintext: [UInt8]) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(plaintext)) as? [String: Any])?["message_id"] as? String
    }

    /// The VAPID `Authorization`: `vapid t=<JWT>, k=<key>`; the JWT verified with `k` (once per
    /// token), `aud` this server's origin, `exp` in the future and at most 24 hours ahead, `sub` a
    /// `mailto:` or `https:` URL. The key on success.
    private func verify(_ authorization: String?, now: Int64) -> Result<String, WebPushRequestRules.Refusal> {
        guard let authorization else { return .failure(.init("no Authorization header")) }
        // A sender reuses one header per origin while its token is valid: read and verified once.
        let key: String, expires: Int64?
        if let known = state.withLock({ $0.authorizations[authorization] }) {
            (key, expires) = known
        } else {
            guard let (token, given) = WebPushRequestRules.vapidParameters(authorization) else {
                return .failure(.init("the Authorization is not `vapid t=<JWT>, k=<key>`"))
            }
            key = given
            let cached = state.withLock { $0.tokens[token] }
            if let cached {
                expires = cached
            } else {
                expires = WebPushRequestRules.verify(jwt: token, key: key, audience: origin)
                state.withLock { state in
                    if state.tokens.updateValue(expires, forKey: token) == nil { state.stats.vapidTokens += 1 }
                }
            }
            state.withLock { state in
                if state.authorizations.count >= 4096 { state.authorizations.removeAll(keepingCapacity: true) }
                state.authorizations[authorization] = (key, expires)
            }
        }
        guard let expires else { return .failure(.init("the VAPID token does not verify (signature, aud \(origin), sub)")) }
        guard expires > now else { return .failure(.init("the VAPID token has expired")) }
        guard expires <= now + 24 * 60 * 60 else { return .failure(.init("the VAPID token's exp is more than 24 hours ahead")) }
        return .success(key)
    }
}
