import AsyncHTTPClient
import CoreMetrics
import DigestCore
import DigestNIO
import DigestStore
import Foundation
import NIOCore

/// APNs as a ``PushTransport``: a row's `message` is the body of `POST {endpoint}/3/device/{target}`
/// with the row's headers (`apns-push-type`, `apns-priority`, `apns-expiration`, `apns-collapse-id`,
/// `apns-id`, `apns-topic`: the sender's topic when the row has none) and the provider token
/// (``APNsProviderToken``), and APNs' answer is read by its table (``APNsResponse``,
/// docs/007-rules-and-limits.md) into an outcome.
///
/// Requests go over lanes (``RequestLanes``), each its own HTTP/2 connection driven at the frame
/// level (``HTTP2Exchange``), kept open; a new connection carries one stream until a request on it
/// was answered 200, then as many as APNs allows (Apple's rule).
struct APNsTransport: PushTransport {
    let endpoint: String
    let topic: String?
    let lanes: [RequestLanes.Lane]
    let exchanges: [HTTP2Exchange]
    let tokens: APNsProviderToken
    let requestTimeout: TimeAmount
    let retry: RetryPolicy
    let clock: @Sendable () -> Int64
    let metrics: SenderMetrics

    init<Database>(client: HTTPClient, tokens: APNsProviderToken, configuration: APNsSender<Database>.Configuration, metrics: SenderMetrics) {
        self.endpoint = configuration.endpoint
        self.topic = configuration.topic
        self.tokens = tokens
        self.requestTimeout = configuration.requestTimeout
        self.retry = configuration.retry
        self.clock = configuration.clock
        self.metrics = metrics
        let connector = HTTP2Connector(
            url: configuration.endpoint, caFile: configuration.caFile, connectTimeout: configuration.connectTimeout, contentType: "application/json",
            oneStreamUntilSuccess: true)
        let count = max(1, min(configuration.connections, configuration.concurrency))
        exchanges = (0..<count).map { _ in
            connector.map { HTTP2Exchange(client: client, url: configuration.endpoint, connector: $0) }
                ?? HTTP2Exchange(client: client, url: configuration.endpoint)
        }
        let eventLoops = Array(client.eventLoopGroup.makeIterator())
        lanes = RequestLanes.make(exchanges: exchanges, eventLoops: eventLoops, concurrency: configuration.concurrency)
    }

    var provider: Provider { .apns }

    var laneCapacities: [Int] { lanes.map(\.requests) }

    func executor(ofLane lane: Int) -> EventLoopExecutor { lanes[lane].executor }

    func prepare() async throws {
        _ = tokens.token(now: clock())  // signed here: the key was checked when it was loaded
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
        var token = tokens.token(now: clock())
        var renewed = false
        var refusals = 0
        while true {
            let answer: HTTP2Exchange.Answer
            let outgoing = HTTP2Exchange.Outgoing(body: ByteBuffer(string: message.message), token: token, path: request.path, headers: request.headers)
            switch await exchange.post(outgoing, on: eventLoop, timeout: requestTimeout, refusals: &refusals, refused: metrics.refused) {
            case .success(let answered): answer = answered
            case .failure(let failure): return .retry(after: nil, failure)
            }
            let now = Date(timeIntervalSince1970: TimeInterval(clock()))
            let verdict = APNsResponse.classify(
                status: answer.status, apnsID: answer.id, requestID: request.id, retryAfter: answer.retryAfter, body: Array(buffer: answer.body),
                policy: retry, now: now)
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
                    token = try tokens.expired(token, now: clock())
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
