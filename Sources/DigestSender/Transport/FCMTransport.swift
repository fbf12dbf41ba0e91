public import AsyncHTTPClient
import CoreMetrics
import DigestCore
import DigestNIO
import DigestStore
import Foundation
public import Logging
import NIOCore

/// FCM HTTP v1 as a ``PushTransport``: a row's `message` is the body of
/// `POST {endpoint}/v1/projects/{project_id}/messages:send` with an OAuth access token, and FCM's
/// answer is read by its errors table (``FCMResponse``, docs/007-rules-and-limits.md, "FCM errors and
/// what the sender does") into an outcome.
///
/// Requests are spread over several lanes (``RequestLanes``), one HTTP/2 connection each (over
/// `https`, the sender's own connection driven at the frame level, ``HTTP2Exchange``; else one client
/// of the sender's): FCM allows 100 concurrent streams a connection and answers in tens of
/// milliseconds, so one connection carries at most about 100 / latency messages a second (1,250 at
/// 80 ms) and the default quota of 10,000 a second needs about ten. Over HTTP/1.1 (a plain `http`
/// endpoint, a server without `h2`) a connection carries one request at a time: one per lane.
public struct FCMTransport: PushTransport {
    /// What only FCM's sender has.
    public struct Configuration: Sendable {
        /// FCM's base URL; the fake server's in tests.
        public var endpoint = "https://fcm.googleapis.com"
        /// FCM's dry run (`validate_only`): check every due message, deliver and change nothing.
        public var validateOnly = false
        /// Over `https`, post on the sender's own HTTP/2 connections, one per client, driven at the
        /// frame level (no per-request stream channel or HTTP/1 codec); the clients then carry only
        /// what such a connection cannot (a server that does not choose `h2`). False: every request
        /// through the clients, which choose the protocol themselves: over `https` the sender then
        /// cannot tell HTTP/1.1 from HTTP/2 and does not hold each connection to one request.
        public var ownHTTP2Connections = true

        public init() {}
    }

    let projectID: String
    let lanes: [RequestLanes.Lane]
    /// One per connection: `client`'s, then each of `connections`'.
    let exchanges: [HTTP2Exchange]
    let tokens: AccessTokenProvider
    let validateOnly: Bool
    let timing: TransportTiming
    let metrics = SenderMetrics(provider: .fcm)

    init<Database>(
        _ fcm: Configuration, projectID: String, client: HTTPClient, connections: [HTTPClient], tokens: AccessTokenProvider,
        sender configuration: PushSender<Database>.Configuration
    ) {
        self.projectID = projectID
        self.tokens = tokens
        self.validateOnly = fcm.validateOnly
        self.timing = TransportTiming(configuration)
        let url = "\(fcm.endpoint)/v1/projects/\(projectID)/messages:send"
        let connector = fcm.ownHTTP2Connections
            ? HTTP2Connector(url: url, caFile: configuration.caFile, connectTimeout: configuration.connectTimeout) : nil
        let clients = [client] + connections
        let eventLoops = Array(client.eventLoopGroup.makeIterator())
        // Over HTTP/1.1 an exchange carries one request at a time for each lane on it.
        let count = RequestLanes.count(exchanges: clients.count, eventLoops: eventLoops.count, concurrency: configuration.concurrency)
        exchanges = clients.enumerated().map { index, client in
            let http1 = RequestLanes.lanes(onExchange: index, of: clients.count, count: count)
            return connector.map { HTTP2Exchange(client: client, url: url, connector: $0, http1Connections: http1) }
                ?? HTTP2Exchange(client: client, url: url, http1Connections: http1)
        }
        lanes = RequestLanes.make(exchanges: exchanges, eventLoops: eventLoops, concurrency: configuration.concurrency)
    }

    var provider: Provider { .fcm }

    var environmentCheck: SenderStateMachine<ContinuousClock.Instant>.EnvironmentCheck? { nil }

    var laneCapacities: [Int] { lanes.map(\.requests) }

    func executor(ofLane lane: Int) -> EventLoopExecutor { lanes[lane].executor }

    func prepare() async throws {
        _ = try await tokens.token()  // bad credentials stop here, before anything is leased
    }

    func close() {
        for exchange in exchanges { exchange.closeConnection() }
    }

    /// One try of one message.
    ///
    /// A request the server refused unprocessed (a stream past the last one its GOAWAY names, or reset
    /// with REFUSED_STREAM) is posted again at once and is no try: FCM did nothing with it. Any other
    /// failure without an answer may have been delivered, and is retried later as a try. A 401 fetches
    /// a new access token and tries once more.
    func deliver(_ message: LeasedMessage, lane: Int) async -> PushOutcome {
        let exchange = lanes[lane].exchange, eventLoop = lanes[lane].executor.eventLoop
        let started = ContinuousClock.now
        defer { metrics.latency.recordNanoseconds(Int64((ContinuousClock.now - started).seconds * 1e9)) }
        var reauthenticated = false
        var refusals = 0
        while true {
            let token: String
            do {
                if let cached = tokens.currentToken() { token = cached } else { token = try await tokens.token() }
            } catch {
                let failure = error as? SenderError
                // A source still unavailable when the token expired: exit 75, a later start may work.
                return .credentialsRefused(
                    stopError(failure?.code == .unavailable ? .unavailable : .authentication, errorCode: "AUTH", detail: failure?.message ?? "\(error)"))
            }
            let body = ByteBuffer(string: validateOnly ? Self.dryRun(message.message) : message.message)
            let verdict: FCMVerdict
            let answer: HTTP2Exchange.Answer
            switch await exchange.post(
                .init(body: body, token: token), on: eventLoop, timeout: timing.requestTimeout, refusals: &refusals, refused: metrics.refused)
            {
            case .success(let answered): answer = answered
            case .failure(let failure): return .retry(after: nil, failure)
            }
            // The sender's clock reads whole seconds, as HTTP dates do: a Retry-After date that is the
            // longest wait comes back as the retry time exactly (the state machine adds the delay to
            // the same clock), and a hold of every send lasts at most a second longer.
            let now = Date(timeIntervalSince1970: TimeInterval(timing.clock()))
            verdict = FCMResponse.classify(status: answer.status, retryAfter: answer.retryAfter, body: Array(buffer: answer.body), policy: timing.retry, now: now)
            switch verdict {
            case .sent(let name):
                return .sent(receipt: name)
            case .retry(let after, let code, let detail):
                // FCM asked every connection to slow down: a 429 with Retry-After.
                let pause = answer.status == 429 ? answer.retryAfter.flatMap { FCMResponse.parseRetryAfter($0, now: now) }.map(timing.retry.scaled) : nil
                return .retry(after: after, .init(code: code, detail: detail), pauseEverything: pause)
            case .dead(let code, let detail, let unregistered):
                return unregistered ? .deviceDead(.init(code: code, detail: detail)) : .messageDead(.init(code: code, detail: detail))
            case .stop(let code, let errorCode, let detail):
                return .credentialsRefused(stopError(code, errorCode: errorCode, detail: detail))
            case .reauthenticate(let detail):
                if reauthenticated { return .credentialsRefused(stopError(.authentication, errorCode: "UNAUTHENTICATED", detail: detail)) }
                await tokens.invalidate(token)
                reauthenticated = true
            }
        }
    }

    /// `{"message":…}` → `{"validate_only":true,"message":…}`.
    static func dryRun(_ body: String) -> String {
        guard body.hasPrefix("{") else { return body }
        return "{\"validate_only\":true," + body.dropFirst()
    }

    private func stopError(_ code: SenderError.Code, errorCode: String, detail: String) -> SenderError {
        Self.stopError(code, errorCode: errorCode, detail: detail, projectID: projectID, principal: tokens.principal)
    }

    static func stopError(_ code: SenderError.Code, errorCode: String, detail: String, projectID: String, principal: String) -> SenderError {
        if code == .unavailable {
            return SenderError(code, "no access token (\(detail)); leases released, nothing more sent")
        }
        let advice: String
        switch code {
        case .thirdPartyAuth:
            advice = "the APNs authentication key or certificate, or the web push credentials, in the Firebase project \(projectID) are missing or invalid"
        case .configuration:
            advice = "check --endpoint and the project id \(projectID)"
        default:
            advice = "\(principal) may not send messages for the project \(projectID): check its key or access scopes and its Firebase Cloud Messaging permission"
        }
        // AUTH: the credentials source refused a refresh mid-run, not FCM.
        let cause = errorCode == "AUTH" ? "no access token (\(detail))" : "FCM answered \(errorCode) (\(detail))"
        return SenderError(code, "\(cause): \(advice); leases released, nothing more sent")
    }
}

extension PushSender {
    /// FCM's sender for the Firebase project `projectID`: `client` fetches access tokens and carries
    /// requests; `connections` are more clients on the same event loops to spread requests over (one
    /// HTTP/2 connection each). The caller shuts them down.
    public init(
        database: Database, fcm: FCMTransport.Configuration, projectID: String, tokens: AccessTokenProvider, client: HTTPClient,
        connections: [HTTPClient] = [], configuration: Configuration, logger: Logger
    ) {
        let transport = FCMTransport(fcm, projectID: projectID, client: client, connections: connections, tokens: tokens, sender: configuration)
        self.init(database: database, transport: transport, client: client, configuration: configuration, logger: logger)
    }
}
