import AsyncHTTPClient
import NIOCore
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 connection to a push provider (FCM, APNs) driven at the frame level: after `NIOHTTP2Handler` in the pipeline,
/// it gives each request a stream id, writes its HEADERS and DATA, collects the answer's HEADERS and
/// DATA by stream id and completes the caller. No stream channel, HTTP/1 codec or request state
/// machine per request, as async-http-client's HTTP/2 connections have.
///
/// Which request has which stream, which wait, and what each answer holds is
/// ``HTTP2StreamsStateMachine``'s (its invariants are this connection's): this handler only turns
/// frames and calls into its events and carries out what they return (writes, resets, completions,
/// the close). Every caller is completed exactly once. Confined to its channel's event loop.
final class HTTP2Connection: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// A request waiting for a stream or for its answer; it fails if no answer came `timeout` after
    /// it was written.
    struct Request {
        let id: UInt64
        let headers: HPACKHeaders
        let body: ByteBuffer
        let timeout: TimeAmount
        let continuation: UnsafeContinuation<HTTP2Exchange.Answer, any Error>
    }

    /// The connection window this side offers, and the consumed bytes after which it is topped up.
    static let connectionWindow = 1 << 24
    /// Each stream's receive window: above ``HTTP2Exchange/maxAnswerBytes``, so a too-large answer fails
    /// at once instead of stalling until its deadline.
    static let streamWindow = 1 << 17

    private var context: ChannelHandlerContext?
    private var ready: EventLoopPromise<Void>?
    private var streams: HTTP2StreamsStateMachine<Request>
    private var consumed = 0
    private var flushPending = false
    private var deadlineCheck: Scheduled<Void>?
    private let checkInterval: TimeAmount

    /// `ready` succeeds once the server's first SETTINGS arrive, fails if the connection closes first.
    /// `oneStreamUntilSuccess`: one stream at a time until a request was answered 200 (APNs).
    init(ready: EventLoopPromise<Void>, timeout: TimeAmount, oneStreamUntilSuccess: Bool = false) {
        self.ready = ready
        self.streams = HTTP2StreamsStateMachine(oneStreamUntilSuccess: oneStreamUntilSuccess)
        // Deadlines are checked a few times per timeout: a request fails at most a quarter late.
        self.checkInterval = max(.milliseconds(5), min(.seconds(1), .nanoseconds(timeout.nanoseconds / 4)))
    }

    /// Whether new requests may start here (no GOAWAY, not closed, stream ids left).
    var isAccepting: Bool { streams.isAccepting }

    // MARK: Requests

    /// Opens a stream for `request`, or queues it while every stream the server allows is open.
    func start(_ request: Request) {
        guard context != nil else { return request.continuation.resume(throwing: HTTP2StreamsStateMachine<Request>.refused(0)) }
        perform(streams.start(request, id: request.id, timeout: request.timeout, now: .now()))
    }

    /// Fails request `id` as cancelled and resets its stream, if it is still here.
    func cancel(_ id: UInt64) {
        perform(streams.cancel(id, now: .now()))
    }

    /// No new streams; closes once the open ones end (at once if none is).
    func closeWhenIdle() {
        perform(streams.closeWhenIdle())
    }

    /// Carries out what the streams' state machine decided.
    private func perform(_ actions: HTTP2StreamsStateMachine<Request>.Actions) {
        if let context {
            for (streamID, request) in actions.writes {
                let id = HTTP2StreamID(streamID)
                context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: request.headers)))), promise: nil)
                context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))), promise: nil)
            }
            for (streamID, code) in actions.resets {
                context.write(wrapOutboundOut(HTTP2Frame(streamID: HTTP2StreamID(streamID), payload: .rstStream(code))), promise: nil)
            }
            if !actions.writes.isEmpty || !actions.resets.isEmpty { scheduleFlush() }
        } else {
            for (_, request) in actions.writes { request.continuation.resume(throwing: HTTP2StreamsStateMachine<Request>.refused(0)) }
        }
        for (request, result) in actions.completions { request.continuation.resume(with: result) }
        if actions.close { context?.close(promise: nil) }
    }

    /// One flush for all the requests started in this turn of the event loop.
    private func scheduleFlush() {
        guard !flushPending, let context else { return }
        flushPending = true
        context.eventLoop.assumeIsolatedUnsafeUnchecked().execute {
            self.flushPending = false
            self.context?.flush()
        }
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { channelActive(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        guard deadlineCheck == nil else { return }
        let increment = Self.connectionWindow - 65_535
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))), promise: nil)
        scheduleDeadlineCheck(on: context.eventLoop)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let streamID = Int32(frame.streamID)
        switch frame.payload {
        case .headers(let headers):
            let status = headers.headers.first(name: ":status").flatMap { Int($0) }
            perform(streams.headers(
                streamID, status: status, retryAfter: status.flatMap { $0 >= 200 ? headers.headers.first(name: "retry-after") : nil },
                id: status.flatMap { $0 >= 200 ? headers.headers.first(name: "apns-id") ?? headers.headers.first(name: "location") : nil }, endStream: headers.endStream, now: .now()))
        case .data(let data):
            consumed += data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0)
            guard case .byteBuffer(let buffer) = data.data else { return }
            perform(streams.data(streamID, buffer, endStream: data.endStream, now: .now()))
        case .rstStream(let code):
            perform(streams.streamFailed(streamID, NIOHTTP2Errors.streamClosed(streamID: frame.streamID, errorCode: code), now: .now()))
        case .goAway(let lastStreamID, _, _):
            perform(streams.goAway(lastStreamID: Int32(lastStreamID)))
        case .settings(.settings(let settings)):
            // The server's limit first: the requests that waited for the connection start when it is ready.
            let limit = settings.last { $0.parameter == .maxConcurrentStreams }.map(\.value)
            perform(streams.settings(maxConcurrentStreams: limit, now: .now()))
            if let ready {
                self.ready = nil
                ready.succeed()
            }
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Give back what the answers used of the connection window, in big steps.
        if consumed >= Self.connectionWindow / 2 {
            let increment = consumed
            consumed = 0
            context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))), promise: nil)
            scheduleFlush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A stream the HTTP/2 handler closed on its own (a protocol error on it, say): its frames
        // came first, so a stream still open here got no complete answer.
        if let closed = event as? StreamClosedEvent {
            perform(streams.streamFailed(
                Int32(closed.streamID), NIOHTTP2Errors.streamClosed(streamID: closed.streamID, errorCode: closed.reason ?? .cancel), now: .now()))
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// An error on one stream (its writes failed) fails that stream; any other (TLS, the connection,
    /// an HTTP/2 protocol error) closes the connection, which fails its open streams as not refused.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            return perform(streams.streamFailed(Int32(streamError.streamID), streamError.baseError, now: .now()))
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        shutDown()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        shutDown()
        self.context = nil
    }

    /// The connection is gone: the streams' state machine fails what it holds.
    private func shutDown() {
        guard !streams.closed else { return }
        deadlineCheck?.cancel()
        deadlineCheck = nil
        ready?.fail(HTTPClientError.remoteConnectionClosed)
        ready = nil
        perform(streams.connectionClosed(HTTPClientError.remoteConnectionClosed))
    }

    private func scheduleDeadlineCheck(on loop: any EventLoop) {
        deadlineCheck = loop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: checkInterval) {
            guard !self.streams.closed else { return }
            self.perform(self.streams.expire(now: .now()))
            self.scheduleDeadlineCheck(on: loop)
        }
    }

    static func refused(_ streamID: Int32) -> NIOHTTP2Errors.StreamClosed {
        HTTP2StreamsStateMachine<Request>.refused(streamID)
    }
}
