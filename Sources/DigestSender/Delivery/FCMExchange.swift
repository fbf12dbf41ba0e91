package import AsyncHTTPClient
package import NIOCore
import NIOHTTP1
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
