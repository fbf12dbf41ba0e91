package import AsyncHTTPClient
package import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import Synchronization

/// One push request and its answer, on an event loop the caller picks: FCM's `messages:send` (the
/// URL's path, ``post(_:token:on:timeout:)``) or APNs' `/3/device/{token}` (a path and headers per
/// request, ``post(_:on:timeout:)``).
///
/// With a ``HTTP2Connector`` (an `https` endpoint) requests go over the exchange's own HTTP/2
/// connection, driven at the frame level (``HTTP2Connection``), opened on first use and replaced
/// when the server sends GOAWAY or the connection is lost; if the server does not choose `h2`, every
/// request from then on goes through `client`. Through the client, per message it only copies a
/// prepared request and sets the body: the URL is parsed once, the headers are built once per access
/// token, and the answer is collected on the event loop that owns the connection.
///
/// Over HTTP/1.1 (a plain `http` endpoint, or a server that does not choose `h2`) a connection carries
/// one request at a time: at most `http1Connections` requests go to the client at once, the others
/// wait here (``ConnectionTurns``) instead of in the client's pool behind connections being opened.
/// Either way a request's deadline counts from when it is written, not from when it was queued.
///
/// `package`: `digest-fcm-load` measures this request path on its own; not part of the library's API.
package final class HTTP2Exchange: Sendable {
    /// What came back.
    package struct Answer: Sendable {
        package var status: Int
        package var retryAfter: String?
        package var body: ByteBuffer
        /// The provider's id of what it accepted: the answer's `apns-id` (APNs), else its `Location`
        /// (Web Push: the message's URL at the push service).
        var id: String?
    }

    /// A request beyond the exchange's URL: the body, the credentials (`authorization`: a bearer
    /// token, or another scheme's value), the path when not the URL's, and more headers (after
    /// `authorization`, before `content-type`).
    struct Outgoing: Sendable {
        var body: ByteBuffer
        var token: String
        var path: String?
        var headers: [(name: String, value: String)] = []
        /// The whole `authorization` value when it is not `Bearer <token>` (Web Push: `vapid t=…, k=…`,
        /// sent as the token source made it, not taken apart and put together again each request).
        var authorization: String?
    }

    private let client: HTTPClient
    private let url: String
    private let contentType: String
    private let prepared = Mutex<(token: String, request: HTTPClient.Request)?>(nil)

    /// Answers bigger than this fail the request (FCM's are a few hundred bytes).
    static let maxAnswerBytes = 64 * 1024

    struct TooLarge: Error, CustomStringConvertible {
        var description: String { "the answer exceeds \(HTTP2Exchange.maxAnswerBytes) bytes" }
    }

    /// The own HTTP/2 connection's state, on its event loop; nil: always through the client.
    private let lane: NIOLoopBoundBox<HTTP2ConnectionLane>?
    private let laneLoop: (any EventLoop)?
    /// Set once the server answered TLS without `h2`: the client carries every request.
    private let noHTTP2 = Atomic<Bool>(false)
    private let requestIDs = Atomic<UInt64>(0)
    /// A plain `http` endpoint: HTTP/1.1 only (no h2 without TLS).
    private let plainHTTP: Bool
    /// Requests at once through the client while it speaks HTTP/1.1.
    private let turns: ConnectionTurns

    /// Every request through `client`; over HTTP/1.1 at most `http1Connections` at once.
    package init(client: HTTPClient, url: String, http1Connections: Int = 1) {
        self.client = client
        self.url = url
        self.contentType = HTTP2Connector.fcmContentType
        self.lane = nil
        self.laneLoop = nil
        self.plainHTTP = url.lowercased().hasPrefix("http://")
        self.turns = ConnectionTurns(limit: http1Connections)
    }

    /// Requests over its own HTTP/2 connection made by `connector` on an event loop of `client`,
    /// which carries them only if the server does not speak HTTP/2 (then at most `http1Connections`
    /// at once).
    package init(client: HTTPClient, url: String, connector: HTTP2Connector, http1Connections: Int = 1) {
        self.client = client
        self.url = url
        self.contentType = connector.contentType
        let loop = client.eventLoopGroup.next()
        self.laneLoop = loop
        self.lane = NIOLoopBoundBox.makeBoxSendingValue(HTTP2ConnectionLane(connector: connector, loop: loop), eventLoop: loop)
        self.plainHTTP = false
        self.turns = ConnectionTurns(limit: http1Connections)
    }

    /// Whether requests go through the client over HTTP/1.1: the endpoint is plain `http`, or its
    /// server did not choose `h2`. A connection then carries one request at a time.
    package var isHTTP1: Bool { plainHTTP || noHTTP2.load(ordering: .relaxed) }

    /// Posts `body` with `token` to the URL on `eventLoop`; throws when no answer came (refused,
    /// dropped, timed out `timeout` after the request was written).
    package func post(_ body: ByteBuffer, token: String, on eventLoop: any EventLoop, timeout: TimeAmount) async throws -> Answer {
        try await post(Outgoing(body: body, token: token), on: eventLoop, timeout: timeout)
    }

    /// Posts `outgoing` on `eventLoop`; throws when no answer came (refused, dropped, timed out
    /// `timeout` after the request was written).
    func post(_ outgoing: Outgoing, on eventLoop: any EventLoop, timeout: TimeAmount) async throws -> Answer {
        if let lane, let laneLoop, !noHTTP2.load(ordering: .relaxed) {
            do {
                return try await post(outgoing, lane: lane, on: laneLoop, timeout: timeout)
            } catch is NoHTTP2 {
                noHTTP2.store(true, ordering: .relaxed)
            }
        }
        var request = try request(for: outgoing)
        request.body = .byteBuffer(outgoing.body)
        // Over HTTP/1.1 wait for a connection's turn here, where no deadline runs.
        let turn = isHTTP1
        if turn { try await turns.take() }
        defer { if turn { turns.give() } }
        // No deadline for the client: one that starts now would count the wait for a connection to
        // open. A request not yet written is bounded by the pool's connect timeout; once written, the
        // collector fails it `timeout` later.
        let task = client.execute(
            request: request, delegate: AnswerCollector(timeout: timeout), eventLoop: .delegate(on: eventLoop), logger: nil)
        return try await withTaskCancellationHandler {
            try await task.get()
        } onCancel: {
            task.cancel()
        }
    }

    /// Closes the own HTTP/2 connection once its open streams end (the next request opens another).
    package func closeConnection() {
        guard let lane, let laneLoop else { return }
        laneLoop.execute { lane.value.close() }
    }

    private func post(
        _ outgoing: Outgoing, lane: NIOLoopBoundBox<HTTP2ConnectionLane>, on loop: any EventLoop, timeout: TimeAmount
    ) async throws -> Answer {
        let id = requestIDs.wrappingAdd(1, ordering: .relaxed).newValue
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                if loop.inEventLoop {
                    lane.value.start(id: id, outgoing, timeout: timeout, continuation: continuation)
                } else {
                    loop.execute { lane.value.start(id: id, outgoing, timeout: timeout, continuation: continuation) }
                }
            }
        } onCancel: {
            loop.execute { lane.value.cancel(id) }
        }
    }

    /// Whether `error` says the server did not process the request, so it is safe to send again
    /// (RFC 9113, 8.7). On the exchange's own connection (``HTTP2Connection``) such a request fails
    /// with `StreamClosed` and REFUSED_STREAM: past a GOAWAY's last stream, never written, or reset so
    /// by the server. Through the client, measured against the fake server's GOAWAY: async-http-client
    /// fails the requests past the last stream it names with `StreamClosed` and the code CANCEL (NIOHTTP2 closes them so),
    /// with `ChannelError.ioOnClosedChannel` when their writes found the stream closed, and with
    /// `cancelled` a request it had not written yet because its connection was closing (as it does a
    /// request its caller cancelled: the caller tells them apart). A stream reset with REFUSED_STREAM
    /// was not processed either. A server's own RST_STREAM with CANCEL looks like the first case; FCM
    /// refuses with REFUSED_STREAM, and such a reset of a request it did process would make one
    /// duplicate, as a lost connection can (docs/003-outbox-consumers.md). Any other failure without
    /// an answer (`remoteConnectionClosed`, a deadline, another reset) is retried later as a try.
    package static func wasRefused(_ error: any Error) -> Bool {
        if let closed = error as? NIOHTTP2Errors.StreamClosed { return closed.errorCode == .refusedStream || closed.errorCode == .cancel }
        if let channel = error as? ChannelError, case .ioOnClosedChannel = channel { return true }
        return (error as? HTTPClientError) == .cancelled && !Task.isCancelled
    }

    /// The request for `outgoing`: prepared once per token for the URL's path, made anew for another.
    private func request(for outgoing: Outgoing) throws -> HTTPClient.Request {
        if outgoing.path == nil && outgoing.headers.isEmpty, let cached = prepared.withLock({ $0 }), cached.token == outgoing.token {
            return cached.request
        }
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: outgoing.authorization ?? "Bearer \(outgoing.token)")
        for (name, value) in outgoing.headers { headers.add(name: name, value: value) }
        headers.add(name: "Content-Type", value: contentType)
        guard let path = outgoing.path else {
            let request = try HTTPClient.Request(url: url, method: .POST, headers: headers)
            prepared.withLock { $0 = (outgoing.token, request) }
            return request
        }
        return try HTTPClient.Request(url: url + path, method: .POST, headers: headers)
    }
}

/// Collects an answer on its event loop, and fails the request `timeout` after its head was written.
/// The `Mutex`es are never contended: AsyncHTTPClient calls a delegate on one event loop, one callback
/// at a time.
private final class AnswerCollector: HTTPClientResponseDelegate {
    typealias Response = HTTP2Exchange.Answer

    private let timeout: TimeAmount
    private let answer = Mutex(HTTP2Exchange.Answer(status: 0, retryAfter: nil, body: ByteBuffer()))
    private let deadline = Mutex<Scheduled<Void>?>(nil)

    init(timeout: TimeAmount) { self.timeout = timeout }

    /// Written: the deadline starts now (the time spent waiting for a connection does not count).
    func didSendRequestHead(task: HTTPClient.Task<Response>, _ head: HTTPRequestHead) {
        let scheduled = task.eventLoop.scheduleTask(in: timeout) { task.fail(reason: HTTPClientError.deadlineExceeded) }
        deadline.withLock { $0 = scheduled }
    }

    func didReceiveError(task: HTTPClient.Task<Response>, _ error: any Error) {
        deadline.withLock { $0?.cancel() }
    }

    func didReceiveHead(task: HTTPClient.Task<Response>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        answer.withLock {
            $0.status = Int(head.status.code)
            $0.retryAfter = head.headers.first(name: "Retry-After")
            $0.id = head.headers.first(name: "apns-id") ?? head.headers.first(name: "location")
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Response>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let fits = answer.withLock { answer in
            guard answer.body.readableBytes + buffer.readableBytes <= HTTP2Exchange.maxAnswerBytes else { return false }
            if answer.body.readableBytes == 0 { answer.body = buffer } else { answer.body.writeImmutableBuffer(buffer) }
            return true
        }
        return fits ? task.eventLoop.makeSucceededVoidFuture() : task.eventLoop.makeFailedFuture(HTTP2Exchange.TooLarge())
    }

    func didFinishRequest(task: HTTPClient.Task<Response>) throws -> Response {
        deadline.withLock { $0?.cancel() }
        return answer.withLock { $0 }
    }
}
