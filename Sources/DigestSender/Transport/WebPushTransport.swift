public import AsyncHTTPClient
import CoreMetrics
import DigestCore
import DigestNIO
import DigestStore
import Foundation
public import Logging
import NIOCore
import Synchronization

/// Standard Web Push (RFC 8030) as a ``PushTransport``, without Firebase: a row's `message` is the
/// plaintext the service worker receives, its `target` the subscription's endpoint, its `headers` a
/// ``WebPushHeaders`` (urgency, topic, expiry, the subscription's keys). Each try encrypts the
/// plaintext afresh (RFC 8291, `aes128gcm`: a new key pair and salt), signs with the origin's VAPID
/// token (RFC 8292, one token per push service reused for hours) and posts it to the endpoint with
/// `TTL` (the seconds left until the row's expiry), `Urgency` and `Topic`; the answer is read by its
/// table (``WebPushResponse``, docs/016-web-push.md, "Answers").
///
/// Endpoints are untrusted URLs: only `https`, only the browsers' push services unless
/// ``Configuration/allowedHosts`` adds more (``PushHostPolicy``: a message to another host is
/// postponed untried and counted, `HOST_NOT_ALLOWED`), connected to only at an address the policy
/// allows, never a non-public one the operator did not list. A push service that refuses the key for
/// two subscriptions and accepted none gets nothing more (`VAPID_REFUSED`), while the other services
/// go on. Each push service (origin) has its own connections (``WebPushOrigin``): HTTP/2 where the
/// service offers it, else HTTP/1.1 through the client. Lanes here are not connections but shares of
/// the requests in flight, each on one of the client's event loops. Web Push has no dry run.
public struct WebPushTransport: PushTransport {
    /// What only the Web Push sender has.
    public struct Configuration: Sendable {
        /// The VAPID `sub` claim: a `mailto:` address or an `https:` URL where the push services'
        /// operators can reach the site's (not `…@localhost`: Apple refuses it).
        public var subject: String
        /// Hosts (names or IP addresses) that may be contacted beside the browsers' push services;
        /// a non-public address only when listed (itself, or the name that resolves to it).
        public var allowedHosts: [String] = []
        /// Connections to each push service (HTTP/2 where it offers it, about 100 streams each; over
        /// HTTP/1.1 eight times as many, each carrying one request at a time).
        public var connectionsPerOrigin = 10
        /// Seconds from a VAPID token's signing to its `exp`: 2 to 24 hours.
        public var tokenLifetime: Int64 = 12 * 60 * 60
        /// How long a message to a host not allowed, or to a push service refusing the key, is left
        /// before the sender looks at it again.
        public var notAllowedWait: Duration = .seconds(15 * 60)
        /// How long a message whose refusal (401, 403) is not decided yet waits.
        public var undecidedWait: Duration = .seconds(5 * 60)

        public init(subject: String) { self.subject = subject }
    }

    struct Lane: Sendable {
        let executor: EventLoopExecutor
        let requests: Int
    }

    let lanes: [Lane]
    let origins: WebPushOrigins
    let vapid: VAPIDToken
    let policy: PushHostPolicy
    let hostVerdicts = HostVerdicts()
    let timing: TransportTiming
    let metrics = SenderMetrics(provider: .webpush)
    /// How long a message to a host not allowed, or to an origin that refuses the key, waits before
    /// the sender looks at it again; and a message whose refusal is not decided yet.
    let notAllowedWait: Duration
    let undecidedWait: Duration
    let logger: Logger

    init<Database>(
        _ webPush: Configuration, client: HTTPClient, vapid: VAPIDToken, policy: PushHostPolicy, sender configuration: PushSender<Database>.Configuration,
        logger: Logger
    ) {
        self.vapid = vapid
        self.policy = policy
        self.timing = TransportTiming(configuration)
        self.notAllowedWait = webPush.notAllowedWait
        self.undecidedWait = webPush.undecidedWait
        self.logger = logger
        let eventLoops = Array(client.eventLoopGroup.makeIterator())
        let count = max(1, min(eventLoops.count, configuration.concurrency))
        lanes = (0..<count).map { index in
            Lane(
                executor: EventLoopExecutor(eventLoops[index]),
                requests: max(1, configuration.concurrency / count + (index < configuration.concurrency % count ? 1 : 0)))
        }
        let caFile = configuration.caFile, connectTimeout = configuration.connectTimeout, connections = max(1, webPush.connectionsPerOrigin)
        // Over HTTP/1.1 a connection carries one request at a time: a few per exchange, not hundreds
        // of connections to one push service.
        let http1 = max(1, min(Self.http1ConnectionsPerExchange, configuration.concurrency / connections))
        origins = WebPushOrigins { origin, host in
            let connector = HTTP2Connector(
                url: origin, caFile: caFile, connectTimeout: connectTimeout, contentType: "application/octet-stream",
                addressCheck: { address in
                    policy.allows(address: address, of: host) ? nil : PushAddressNotAllowed(host: host, address: address.ipAddress ?? "\(address)")
                })
            let exchanges = (0..<connections).map { _ in
                connector.map { HTTP2Exchange(client: client, url: origin, connector: $0, http1Connections: http1) }
                    ?? HTTP2Exchange(client: client, url: origin, http1Connections: http1)
            }
            return WebPushOrigin(origin: origin, exchanges: exchanges)
        }
    }

    var provider: Provider { .webpush }

    var validateOnly: Bool { false }

    var environmentCheck: SenderStateMachine<ContinuousClock.Instant>.EnvironmentCheck? { nil }

    var laneCapacities: [Int] { lanes.map(\.requests) }

    func executor(ofLane lane: Int) -> EventLoopExecutor { lanes[lane].executor }

    func prepare() async throws {
        // The key and subject were checked when the token source was made; nothing to ask anyone.
    }

    func close() {
        for origin in origins.all { origin.close() }
    }

    /// One try of one message.
    func deliver(_ message: LeasedMessage, lane: Int) async -> PushOutcome {
        let request: Prepared
        switch prepared(message) {
        case .success(let made): request = made
        case .failure(let unsendable): return unsendable.outcome
        }
        let origin = origins.origin(request.origin, host: request.host)
        if origin.refusesKey { return keyRefused(request.origin) }
        let eventLoop = lanes[lane].executor.eventLoop
        let exchange = origin.nextExchange()
        let started = ContinuousClock.now
        defer { metrics.latency.recordNanoseconds(Int64((ContinuousClock.now - started).seconds * 1e9)) }
        var authorization = vapid.authorization(origin: request.origin, now: timing.clock())
        var renewed = false
        var refusals = 0
        while true {
            let body: [UInt8]
            do {
                body = try WebPushEncryption.encrypt(request.plaintext, to: request.keys)
            } catch {
                return .messageDead(.init(code: "PAYLOAD_TOO_LARGE", detail: error.message))
            }
            var headers = request.headers
            headers.append(("ttl", String(request.ttl)))
            let outgoing = HTTP2Exchange.Outgoing(
                body: ByteBuffer(bytes: body), token: "", path: request.path, headers: headers, authorization: authorization)
            let answer: HTTP2Exchange.Answer
            switch await exchange.post(outgoing, on: eventLoop, timeout: timing.requestTimeout, refusals: &refusals, refused: metrics.refused) {
            case .success(let answered): answer = answered
            case .failure(let failure) where failure.code == PushAddressNotAllowed.code:
                return .postponed(failure, for: notAllowedWait)
            case .failure(let failure):
                return .retry(after: nil, failure)
            }
            let verdict = WebPushResponse.classify(
                status: answer.status, location: answer.id, retryAfter: answer.retryAfter, body: Array(buffer: answer.body), origin: request.origin,
                policy: timing.retry, now: Date(timeIntervalSince1970: TimeInterval(timing.clock())))
            switch verdict {
            case .sent(let receipt):
                origin.accepted()
                return .sent(receipt: receipt)
            case .gone(let code, let detail):
                return .deviceDead(.init(code: code, detail: detail))
            case .messageDead(let code, let detail):
                return .messageDead(.init(code: code, detail: detail))
            case .retry(let after, let code, let detail):
                return .retry(after: after, .init(code: code, detail: detail))
            case .refused(let status, let said):
                // Once more with a token signed just now: a refusal then is about the key.
                let fresh = vapid.freshAuthorization(origin: request.origin, now: timing.clock())
                if !renewed && fresh != authorization {
                    authorization = fresh
                    renewed = true
                    continue
                }
                switch origin.refused(message.target) {
                case .mismatch:
                    return .deviceDead(.init(
                        code: "VAPID_MISMATCH",
                        detail: "\(request.origin) refused the sender's key for this subscription (\(status))\(said) but accepts it for others: it was made with another applicationServerKey"))
                case .keyRefused(let first):
                    if first {
                        logger.error(
                            "a push service refuses the VAPID key: nothing more is sent there",
                            metadata: ["digest.origin": "\(request.origin)", "digest.status": "\(status)", "digest.advice": "check that --vapid-key-file is the key whose public key the site passes as applicationServerKey"])
                    }
                    return keyRefused(request.origin)
                case .undecided:
                    return .postponed(
                        .init(code: "VAPID_REFUSED", detail: "\(request.origin) refused the sender's key for this subscription (\(status))\(said); left for later until the service's other answers tell a subscription made with another key from a key refused"),
                        for: undecidedWait)
                }
            }
        }
    }

    /// HTTP/1.1 connections each of a push service's exchanges may open (8 × 4 = 32 a service by
    /// default), when the service does not speak HTTP/2.
    static let http1ConnectionsPerExchange = 8

    /// A message for an origin that refuses the key: postponed.
    func keyRefused(_ origin: String) -> PushOutcome {
        .postponed(
            .init(code: "VAPID_REFUSED", detail: "\(origin) refuses the sender's VAPID key for two subscriptions and accepted none: nothing is sent there (check --vapid-key-file)"),
            for: notAllowedWait)
    }

    /// A row made ready to post: the origin it goes to, the path, the fixed headers, the plaintext and
    /// keys, and the `TTL` at this try.
    struct Prepared {
        var origin: String
        var host: String
        var path: String
        var headers: [(name: String, value: String)]
        var plaintext: [UInt8]
        var keys: WebPushSubscriptionKeys
        var ttl: Int64
    }

    /// Why a row cannot become a request.
    struct Unsendable: Error {
        let outcome: PushOutcome
    }

    /// The row as a request, or why not: its headers unreadable (dead message), its endpoint not an
    /// https URL or its keys unusable (dead subscription), its host not allowed (postponed), its
    /// expiry past (dead message: `TTL` would be 0).
    func prepared(_ message: LeasedMessage) -> Result<Prepared, Unsendable> {
        let row: WebPushHeaders
        do {
            row = try WebPushHeaders(json: Array((message.headers ?? "").utf8))
        } catch {
            return .failure(Unsendable(outcome: .messageDead(.init(code: "BAD_ROW", detail: "the outbox row's Web Push headers: \(error)"))))
        }
        let endpoint: WebPushEndpoint
        do {
            endpoint = try WebPushEndpoint(message.target)
        } catch {
            return .failure(Unsendable(outcome: .deviceDead(.init(code: "BAD_ENDPOINT", detail: error.message))))
        }
        guard hostVerdicts.allows(endpoint.host, policy: policy) else {
            return .failure(Unsendable(outcome: .postponed(
                .init(code: "HOST_NOT_ALLOWED", detail: "\(endpoint.origin) is not a known push service: add \(endpoint.host) to --allow-push-hosts to send there"),
                for: notAllowedWait)))
        }
        let keys: WebPushSubscriptionKeys
        do {
            keys = try WebPushSubscriptionKeys(p256dh: row.p256dh, auth: row.auth)
        } catch {
            return .failure(Unsendable(outcome: .deviceDead(.init(code: "BAD_KEYS", detail: error.message))))
        }
        let ttl = row.ttl(now: timing.clock())
        guard ttl > 0 else {
            return .failure(Unsendable(outcome: .messageDead(.init(code: "EXPIRED", detail: "its TTL ended at \(Timestamp.format(row.expiresAt)): not sent"))))
        }
        var headers: [(name: String, value: String)] = [("content-encoding", "aes128gcm"), ("urgency", row.urgency.rawValue)]
        if let topic = row.topic { headers.append(("topic", topic)) }
        return .success(Prepared(origin: endpoint.origin, host: endpoint.host, path: endpoint.path, headers: headers, plaintext: Array(message.message.utf8), keys: keys, ttl: ttl))
    }
}

/// The policy's answer for each host asked about, remembered: every message asks, and the answer
/// for an address (a parse of the literal) costs more than the rest of the row's reading. At most
/// ``limit`` hosts are remembered; past that the memo starts again (endpoints' hosts are a handful
/// of push services, unless rows point anywhere).
final class HostVerdicts: Sendable {
    static let limit = 1024
    private let verdicts = Mutex<[String: Bool]>([:])

    func allows(_ host: String, policy: PushHostPolicy) -> Bool {
        if let known = verdicts.withLock({ $0[host] }) { return known }
        let verdict = policy.allows(host: host)
        verdicts.withLock { verdicts in
            if verdicts.count >= Self.limit { verdicts.removeAll(keepingCapacity: true) }
            verdicts[host] = verdict
        }
        return verdict
    }
}

/// A subscription's endpoint, split for the request: the origin (the VAPID `aud`, the connections'
/// key), the host (the policy's question) and the path with its query (the request's `:path`).
///
/// Read byte by byte (RFC 3986's grammar, narrowed to what a push endpoint is: `https`, a host and
/// an optional port, no user information) rather than by `URLComponents`, which cost the sender
/// more than a message's HMACs on every try.
struct WebPushEndpoint {
    let origin: String
    let host: String
    let path: String

    /// Throws ``WebPushError`` for anything but an `https` URL with a host, no user name or
    /// password, a port of 1–65535 when given, and a path and query of URL characters (a fragment is
    /// dropped); the message never shows the endpoint (its path identifies the subscription).
    init(_ endpoint: String) throws(WebPushError) {
        let bytes = Array(endpoint.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) else {
            throw WebPushError(.endpoint, "the push endpoint is not a URL")
        }
        let scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
        guard scheme == "https" else {
            throw WebPushError(.endpoint, "the push endpoint's scheme is \(scheme.prefix(16)): only https is sent to")
        }
        let authorityStart = colon + 3
        let authorityEnd = bytes[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
        let authority = bytes[authorityStart..<authorityEnd]
        guard !authority.contains(UInt8(ascii: "@")) else {
            throw WebPushError(.endpoint, "the push endpoint holds a user name or password")
        }
        // The host: an IPv6 address in brackets, else everything up to the port's colon.
        let host: ArraySlice<UInt8>, portText: ArraySlice<UInt8>?
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { throw WebPushError(.endpoint, "the push endpoint's host is not a URL host") }
            host = authority[authority.startIndex...close]
            let rest = authority[(close + 1)...]
            guard rest.isEmpty || rest.first == UInt8(ascii: ":") else { throw WebPushError(.endpoint, "the push endpoint's host is not a URL host") }
            portText = rest.isEmpty ? nil : rest.dropFirst()
        } else if let portColon = authority.firstIndex(of: UInt8(ascii: ":")) {
            host = authority[..<portColon]
            portText = authority[(portColon + 1)...]
        } else {
            host = authority
            portText = nil
        }
        guard !host.isEmpty else { throw WebPushError(.endpoint, "the push endpoint has no host") }
        guard host.first == UInt8(ascii: "[")
            ? host.count > 2 && host.dropFirst().dropLast().allSatisfy({ Self.isHex($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") })
            : host.allSatisfy({ Self.isUnreserved($0) || Self.isSubDelimiter($0) })
        else { throw WebPushError(.endpoint, "the push endpoint's host is not a URL host") }
        var port = 443
        if let portText, !portText.isEmpty {
            guard portText.count <= 5, portText.allSatisfy({ (0x30...0x39).contains($0) }), let number = Int(String(decoding: portText, as: UTF8.self)),
                  (1...65535).contains(number)
            else { throw WebPushError(.endpoint, "the push endpoint's port is not 1 to 65535") }
            port = number
        }
        // The path and query as written, up to a fragment; checked for URL characters and escapes.
        let end = bytes[authorityEnd...].firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex
        let rest = bytes[authorityEnd..<end]
        var index = rest.startIndex
        while index < rest.endIndex {
            let byte = rest[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < rest.endIndex, Self.isHex(rest[index + 1]), Self.isHex(rest[index + 2]) else {
                    throw WebPushError(.endpoint, "the push endpoint's path holds a % not followed by two hex digits")
                }
                index += 3
                continue
            }
            guard Self.isUnreserved(byte) || Self.isSubDelimiter(byte) || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "@") || byte == UInt8(ascii: "/")
                || byte == UInt8(ascii: "?")
            else {
                throw WebPushError(.endpoint, "the push endpoint's path holds a character a URL does not")
            }
            index += 1
        }
        let lowered = String(decoding: host, as: UTF8.self).lowercased()
        origin = port == 443 ? "https://\(lowered)" : "https://\(lowered):\(port)"
        self.host = PushHostPolicy.normalized(lowered)
        path = rest.isEmpty ? "/" : (rest.first == UInt8(ascii: "?") ? "/" : "") + String(decoding: rest, as: UTF8.self)
    }

    /// RFC 3986's `unreserved`: letters, digits, `-` `.` `_` `~`.
    static func isUnreserved(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }

    /// RFC 3986's `sub-delims`: `! $ & ' ( ) * + , ; =`.
    static func isSubDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="):
            true
        default: false
        }
    }

    static func isHex(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}

extension PushSender {
    /// The Web Push sender, signing with the site's VAPID `key`: `client` carries the requests to push
    /// services that do not speak HTTP/2 and lends its event loops; the caller shuts it down. Throws
    /// when the subject, the token lifetime or an allowed host is not usable.
    ///
    /// ```swift
    /// let key = try VAPIDKey(contentsOf: "vapid.pem")
    /// let sender = try PushSender(database: .sqlite(path: "digest.sqlite"), webPush: .init(subject: "mailto:push@example.com"),
    ///                             key: key, client: client, configuration: .init(), logger: logger)
    /// ```
    public init(
        database: Database, webPush: WebPushTransport.Configuration, key: VAPIDKey, client: HTTPClient, configuration: Configuration, logger: Logger
    ) throws(SenderError) {
        let vapid = try VAPIDToken(key: key, subject: webPush.subject, lifetime: webPush.tokenLifetime)
        let policy = try PushHostPolicy(allowing: webPush.allowedHosts)
        let transport = WebPushTransport(webPush, client: client, vapid: vapid, policy: policy, sender: configuration, logger: logger)
        self.init(database: database, transport: transport, client: client, configuration: configuration, logger: logger)
    }
}
