package import AsyncHTTPClient
package import NIOCore
import NIOHTTP1
import NIOHTTP2
import Synchronization

/// One `messages:send` request and its answer, on an event loop the caller picks.
///
/// Per message it only copies a prepared request and sets the body: the URL is parsed once, the
/// headers are built once per access token, and the answer is collected on the event loop that owns
/// the connection (no async body stream, no tracing span, no redirect bookkeeping).
package final class FCMExchange: Sendable {
    /// What came back.
    package struct Answer: Sendable {
        package var status: Int
        package var retryAfter: String?
        package var body: ByteBuffer
    }

    private let client: HTTPClient
    private let url: String
    private let prepared = Mutex<(token: String, request: HTTPClient.Request)?>(nil)

    /// Answers bigger than this fail the request (FCM's are a few hundred bytes).
    static let maxAnswerBytes = 64 * 1024

    package init(client: HTTPClient, url: String) {
        self.client = client
        self.url = url
    }

    /// Posts `body` with `token` on `eventLoop`; throws when no answer came (refused, dropped, timed out).
    package func post(_ body: ByteBuffer, token: String, on eventLoop: any EventLoop, timeout: TimeAmount) async throws -> Answer {
        var request = try request(token: token)
        request.body = .byteBuffer(body)
        let task = client.execute(
            request: request, delegate: AnswerCollector(), eventLoop: .delegate(on: eventLoop),
            deadline: .now() + timeout, logger: nil)
        return try await withTaskCancellationHandler {
            try await task.get()
        } onCancel: {
            task.cancel()
        }
    }

    /// Whether `error` says the server did not process the request, so it is safe to send again
    /// (RFC 9113, 8.7). Measured against the fake server's GOAWAY: async-http-client fails the requests
    /// past the last stream it names with `StreamClosed` and the code CANCEL (NIOHTTP2 closes them so),
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

    /// The request for `token`, prepared once per token.
    private func request(token: String) throws -> HTTPClient.Request {
        if let cached = prepared.withLock({ $0 }), cached.token == token { return cached.request }
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "Bearer \(token)")
        headers.add(name: "Content-Type", value: "application/json; charset=UTF-8")
        let request = try HTTPClient.Request(url: url, method: .POST, headers: headers)
        prepared.withLock { $0 = (token, request) }
        return request
    }
}

/// Collects an answer on its event loop. The `Mutex` is never contended: AsyncHTTPClient calls a
/// delegate on one event loop, one callback at a time.
private final class AnswerCollector: HTTPClientResponseDelegate {
    typealias Response = FCMExchange.Answer

    private let answer = Mutex(FCMExchange.Answer(status: 0, retryAfter: nil, body: ByteBuffer()))

    struct TooLarge: Error, CustomStringConvertible {
        var description: String { "the answer exceeds \(FCMExchange.maxAnswerBytes) bytes" }
    }

    func didReceiveHead(task: HTTPClient.Task<Response>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        answer.withLock {
            $0.status = Int(head.status.code)
            $0.retryAfter = head.headers.first(name: "Retry-After")
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Response>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let fits = answer.withLock { answer in
            guard answer.body.readableBytes + buffer.readableBytes <= FCMExchange.maxAnswerBytes else { return false }
            if answer.body.readableBytes == 0 { answer.body = buffer } else { answer.body.writeImmutableBuffer(buffer) }
            return true
        }
        return fits ? task.eventLoop.makeSucceededVoidFuture() : task.eventLoop.makeFailedFuture(TooLarge())
    }

    func didFinishRequest(task: HTTPClient.Task<Response>) throws -> Response {
        answer.withLock { $0 }
    }
}
