public import AsyncHTTPClient
import CoreMetrics
import DigestCore
import DigestNIO
import DigestStore
import Foundation
public import Logging
import NIOCore

/// APNs as a ``PushTransport``: a row's `message` is the body of `POST {endpoint}/3/device/{target}`
/// with the row's headers (`apns-push-type`, `apns-priority`, `apns-expiration`, `apns-collapse-id`,
/// `apns-id`, `apns-topic`: the sender's topic when the row has none) and a provider token signed with
/// the team's key (``APNsProviderToken``: ES256, renewed every 50 minutes, never sooner than 20), and
/// APNs' answer is read by its table (``APNsResponse``, docs/007-rules-and-limits.md, "APNs answers
/// and what the sender does") into an outcome.
///
/// Requests go over lanes (``RequestLanes``), each its own HTTP/2 connection driven at the frame
/// level (``HTTP2Exchange``), kept open; a new connection carries one stream until a request on it
/// was answered 200, then as many as APNs allows (Apple's rule). When the run's first 20 answers are
/// all `BadDeviceToken`, the tokens are of the other environment (sandbox or production): the run
/// stops with a ``SenderError`` and marks no device dead. A refusal of the key, team or topic stops
/// it too, with the leases released. APNs has no dry run.
public struct APNsTransport: PushTransport {
    /// What only APNs' sender has.
    public struct Configuration: Sendable {
        /// APNs' base URL: production; the sandbox is `https://api.sandbox.push.apple.com`.
        public var endpoint = "https://api.push.apple.com"
        /// `apns-topic` (the app's bundle id) of a message whose row names none.
        public var topic: String?
        /// HTTP/2 connections to APNs (Apple allows several; rapid reconnects it takes for an attack).
        public var connections = 12
        /// The provider token is renewed once it is this old: at least 20 minutes, under 60.
        public var tokenRenewal: Duration = .seconds(50 * 60)

        public init() {}
    }

    let endpoint: String
    let topic: String?
    let lanes: [RequestLanes.Lane]
    let exchanges: [HTTP2Exchange]
    let tokens: APNsProviderToken
    let timing: TransportTiming
    let metrics = SenderMetrics(provider: .apns)

    init<Database>(_ apns: Configuration, client: HTTPClient, tokens: APNsProviderToken, sender configuration: PushSender<Database>.Configuration) {
        self.endpoint = apns.endpoint
        self.topic = apns.topic
        self.tokens = tokens
        self.timing = TransportTiming(configuration)
        let connector = HTTP2Connector(
            url: apns.endpoint, caFile: configuration.caFile, connectTimeout: configuration.connectTimeout, contentType: "application/json",
            oneStreamUntilSuccess: true)
        let count = max(1, min(apns.connections, configuration.concurrency))
        exchanges = (0..<count).map { _ in
            connector.map { HTTP2Exchange(client: client, url: apns.endpoint, connector: $0) }
                ?? HTTP2Exchange(client: client, url: apns.endpoint)
        }
        let eventLoops = Array(client.eventLoopGroup.makeIterator())
        lanes = RequestLanes.make(exchanges: exchanges, eventLoops: eventLoops, concurrency: configuration.concurrency)
    }

    var provider: Provider { .apns }

    var validateOnly: Bool { false }

    /// The first 20 answers all `BadDeviceToken`: the wrong environment.
    var environmentCheck: SenderStateMachine<ContinuousClock.Instant>.EnvironmentCheck? { .init(answers: 20, error: wrongEnvironment) }

    var laneCapacities: [Int] { lanes.map(\.requests) }

    func executor(ofLane lane: Int) -> EventLoopExecutor { lanes[lane].executor }

    func prepare() async throws {
        _ = tokens.token(now: timing.clock())  // signed here: the key was checked when it was loaded
    }

    func close() {
        for exchange in exchanges { exchange.closeConnection() }
    }

    /// The run's failure when its first answers all say `BadDeviceToken`.
    var wrongEnvironment: SenderError {
        let sandbox = endpoint.contains("sandbox")
        return SenderError(
            .configuration,
            "the first 20 answers were all BadDeviceToken: the device tokens are for the other APNs environment than \(endpoint) (\(sandbox ? "production" : "sandbox") tokens?). Development builds of an app register sandbox tokens (https://api.sandbox.push.apple.com), App Store and TestFlight builds production ones (https://api.push.apple.com): check --apns-endpoint; no device marked dead, leases released, nothing more sent")
    }

    /// One try of one message.
    ///
    /// A request the server refused unprocessed (past a GOAWAY's last stream, REFUSED_STREAM) is posted
    /// again at once and is no try; any other failure without an answer is retried later as a try. A
    /// 403 `ExpiredProviderToken` renews the token when it may (``APNsProviderToken/expired(_:now:)``)
    /// and tries once more.
    func deliver(_ message: LeasedMessage, lane: Int) async -> PushOutcome {
        let exchange = lanes[lane].exchange, eventLoop = lanes[lane].executor.eventLoop
        let started = ContinuousClock.now
        defer { metrics.latency.recordNanoseconds(Int64((ContinuousClock.now - started).seconds * 1e9)) }
        let request: (path: String, headers: [(name: String, value: String)], id: String?)
        switch prepared(message) {
        case .success(let made): request = made
        case .failure(let outcome): return outcome.outcome
        }
        var token = tokens.token(now: timing.clock())
        var renewed = false
        var refusals = 0
        while true {
            let answer: HTTP2Exchange.Answer
            let outgoing = HTTP2Exchange.Outgoing(body: ByteBuffer(string: message.message), token: token, path: request.path, headers: request.headers)
            switch await exchange.post(outgoing, on: eventLoop, timeout: timing.requestTimeout, refusals: &refusals, refused: metrics.refused) {
            case .success(let answered): answer = answered
            case .failure(let failure): return .retry(after: nil, failure)
            }
            let now = Date(timeIntervalSince1970: TimeInterval(timing.clock()))
            let verdict = APNsResponse.classify(
                status: answer.status, apnsID: answer.id, requestID: request.id, retryAfter: answer.retryAfter, body: Array(buffer: answer.body),
                policy: timing.retry, now: now)
            switch verdict {
            case .sent(let apnsID):
                return .sent(receipt: apnsID)
            case .retry(let after, let code, let detail):
                return .retry(after: after, .init(code: code, detail: detail))
            case .deviceDead(let code, let detail, let diedAt, let suspect):
                return .deviceDead(.init(code: code, detail: detail), diedAt: diedAt, suspectEnvironment: suspect)
            case .messageDead(let code, let detail):
                return .messageDead(.init(code: code, detail: detail))
            case .stop(let code, let reason, let advice):
                return .credentialsRefused(SenderError(code, "APNs answered \(answer.status) \(reason): \(advice); leases released, nothing more sent"))
            case .renewToken:
                if renewed {
                    return .credentialsRefused(SenderError(.configuration, "APNs answered ExpiredProviderToken to a provider token just made: this machine's clock is likely off from Apple's (check NTP); leases released, nothing more sent"))
                }
                do {
                    token = try tokens.expired(token, now: timing.clock())
                } catch {
                    return .credentialsRefused(error)
                }
                renewed = true
            }
        }
    }

    /// Why a row cannot become a request.
    struct Unsendable: Error {
        let outcome: PushOutcome
    }

    /// The row's path and headers (its `apns-topic`, else the sender's), and its `apns-id`.
    func prepared(_ message: LeasedMessage) -> Result<(path: String, headers: [(name: String, value: String)], id: String?), Unsendable> {
        var fields: [(name: String, value: String)]
        if let scanned = Self.scanHeaders(message.headers ?? "") {
            fields = scanned
        } else {
            do {
                fields = try APNsHeaders(json: Array((message.headers ?? "").utf8)).fields
            } catch {
                return .failure(Unsendable(outcome: .messageDead(.init(code: "BadHeaders", detail: "the outbox row's APNs headers: \(error)"))))
            }
        }
        if !fields.contains(where: { $0.name == "apns-topic" }) {
            guard let topic else {
                return .failure(Unsendable(outcome: .credentialsRefused(SenderError(
                    .configuration, "a message has no apns-topic and no APNs topic was given (--apns-topic, the app's bundle id); leases released, nothing more sent"))))
            }
            fields.append(("apns-topic", topic))
        }
        // A token is hex (kept lower-case); anything else never reaches the URL.
        let target = message.target
        guard !target.isEmpty, target.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) || (0x41...0x46).contains($0) }) else {
            return .failure(Unsendable(outcome: .deviceDead(.init(code: "BadDeviceToken", detail: "the target is not a hex APNs device token; not sent"))))
        }
        return .success(("/3/device/\(target)", fields, fields.first { $0.name == "apns-id" }?.value))
    }

    /// The headers the composer writes (``APNsHeaders/json``: a compact object of `apns-*` strings
    /// without escapes, each non-empty) read by a plain scan, as sent; nil for anything else, which
    /// ``APNsHeaders/init(json:)`` then reads and checks. APNs checks the values either way.
    static func scanHeaders(_ json: String) -> [(name: String, value: String)]? {
        var utf8 = json.utf8[...]
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        guard utf8.popFirst() == UInt8(ascii: "{"), utf8.popLast() == UInt8(ascii: "}") else { return nil }
        func string() -> String? {
            guard utf8.popFirst() == quote, let end = utf8.firstIndex(of: quote) else { return nil }
            let text = utf8[..<end]
            guard !text.isEmpty, !text.contains(backslash) else { return nil }
            utf8 = utf8[utf8.index(after: end)...]
            return String(Substring(text))
        }
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(7)
        while !utf8.isEmpty {
            if !fields.isEmpty { guard utf8.popFirst() == UInt8(ascii: ",") else { return nil } }
            guard let name = string(), headerNames.contains(name), utf8.popFirst() == UInt8(ascii: ":"), let value = string() else { return nil }
            guard !fields.contains(where: { $0.name == name }) else { return nil }
            fields.append((name, value))
        }
        let required = ["apns-push-type", "apns-priority", "apns-expiration"]
        return required.allSatisfy { name in fields.contains { $0.name == name } } ? fields : nil
    }

    /// The headers a row may carry.
    static let headerNames: Set<String> = ["apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id", "apns-id", "apns-topic"]
}

extension PushSender {
    /// APNs' sender, signing its provider tokens with `key`: `client` carries what an own HTTP/2
    /// connection cannot (nothing, against APNs) and lends its event loops; the caller shuts it down.
    /// Throws when `apns.tokenRenewal` is out of range.
    ///
    /// ```swift
    /// let key = try APNsSigningKey(contentsOf: "AuthKey_ABCDE12345.p8", keyID: "ABCDE12345", teamID: "TEAM123456")
    /// var apns = APNsTransport.Configuration()
    /// apns.topic = "com.example.reader"
    /// let sender = try PushSender(database: .sqlite(path: "digest.sqlite"), apns: apns, key: key, client: client,
    ///                             configuration: .init(), logger: logger)
    /// ```
    public init(
        database: Database, apns: APNsTransport.Configuration, key: APNsSigningKey, client: HTTPClient, configuration: Configuration, logger: Logger
    ) throws(SenderError) {
        let tokens = try APNsProviderToken(key: key, renewAfter: Int64(apns.tokenRenewal.seconds))
        let transport = APNsTransport(apns, client: client, tokens: tokens, sender: configuration)
        self.init(database: database, transport: transport, client: client, configuration: configuration, logger: logger)
    }
}
