import AsyncHTTPClient
import NIOCore
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 connection to FCM driven at the frame level: after `NIOHTTP2Handler` in the pipeline,
/// it gives each request a stream id, writes its HEADERS and DATA, collects the answer's HEADERS and
/// DATA by stream id and completes the caller. No stream channel, HTTP/1 codec or request state
/// machine per request, as async-http-client's HTTP/2 connections have.
///
/// Invariants: at most the server's SETTINGS_MAX_CONCURRENT_STREAMS streams are open (more requests
/// wait here, in order, with no deadline running: a request's deadline counts from when its stream is
/// written); after a GOAWAY nothing new is opened, the streams past its last stream id
/// and the requests still waiting fail as refused (``FCMExchange/wasRefused(_:)``: re-sent at once
/// on a new connection); a connection lost fails its open streams as not refused (they may have been
/// delivered). Every caller is completed exactly once. Confined to its channel's event loop.
final class FCMHTTP2Connection: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// A request waiting for a stream or for its answer; it fails if no answer came `timeout` after
    /// it was written.
    struct Request {
        let id: UInt64
        let headers: HPACKHeaders
        let body: ByteBuffer
        let timeout: TimeAmount
        let continuation: UnsafeContinuation<FCMExchange.Answer, any Error>
    }

    private struct Stream {
        var request: Request
        /// When it was written plus its timeout.
        let deadline: NIODeadline
        var answer = FCMExchange.Answer(status: 0, retryAfter: nil, body: ByteBuffer())
    }

    /// The connection window this side offers, and the consumed bytes after which it is topped up.
    static let connectionWindow = 1 << 24
    /// Each stream's receive window: above ``FCMExchange/maxAnswerBytes``, so a too-large answer fails
    /// at once instead of stalling until its deadline.
    static let streamWindow = 1 << 17
    /// Streams open at once whatever the server allows.
    static let streamLimit = 1 << 14

    private var context: ChannelHandlerContext?
    private var ready: EventLoopPromise<Void>?
    private var maxStreams = 100
    private var nextStreamID: Int32 = 1
    private var open: [Int32: Stream] = [:]
    private var waiting = CircularBuffer<Request>()
    private var draining = false
    private var closed = false
    private var consumed = 0
    private var flushPending = false
    private var deadlineCheck: Scheduled<Void>?
    private let checkInterval: TimeAmount

    /// `ready` succeeds once the server's first SETTINGS arrive, fails if the connection closes first.
    init(ready: EventLoopPromise<Void>, timeout: TimeAmount) {
        self.ready = ready
        // Deadlines are checked a few times per timeout: a request fails at most a quarter late.
        self.checkInterval = max(.milliseconds(5), min(.seconds(1), .nanoseconds(timeout.nanoseconds / 4)))
    }

    /// Whether new requests may start here (no GOAWAY, not closed, stream ids left).
    var isAccepting: Bool { !draining && !closed && nextStreamID < Int32.max - 2 * Int32(maxStreams) }

    // MARK: Requests

    /// Opens a stream for `request`, or queues it while every stream the server allows is open.
    func start(_ request: Request) {
        guard isAccepting, context != nil else {
            request.continuation.resume(throwing: Self.refused(0))
            return
        }
        if open.count < maxStreams && waiting.isEmpty { write(request) } else { waiting.append(request) }
    }

    /// Fails request `id` as cancelled and resets its stream, if it is still here.
    func cancel(_ id: UInt64) {
        if let index = waiting.firstIndex(where: { $0.id == id }) {
            waiting.remove(at: index).continuation.resume(throwing: CancellationError())
            return
        }
        if let streamID = open.first(where: { $0.value.request.id == id })?.key {
            fail(streamID, CancellationError(), reset: .cancel)
        }
    }

    private func write(_ request: Request) {
        guard let context else { return request.continuation.resume(throwing: Self.refused(0)) }
        let streamID = nextStreamID
        nextStreamID += 2
        open[streamID] = Stream(request: request, deadline: .now() + request.timeout)
        let id = HTTP2StreamID(streamID)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: request.headers)))), promise: nil)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))), promise: nil)
        scheduleFlush()
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

    /// Starts waiting requests while streams are free.
    private func startWaiting() {
        while open.count < maxStreams, isAccepting, let request = waiting.popFirst() { write(request) }
    }

    private func finish(_ streamID: Int32) {
        guard let stream = open.removeValue(forKey: streamID) else { return }
        stream.request.continuation.resume(returning: stream.answer)
        afterStreamClosed()
    }

    private func fail(_ streamID: Int32, _ error: any Error, reset: HTTP2ErrorCode? = nil) {
        guard let stream = open.removeValue(forKey: streamID) else { return }
        if let reset, let context {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: HTTP2StreamID(streamID), payload: .rstStream(reset))), promise: nil)
            scheduleFlush()
        }
        stream.request.continuation.resume(throwing: error)
        afterStreamClosed()
    }

    private func afterStreamClosed() {
        if !waiting.isEmpty { startWaiting() }
        // Gone away and done: the server closes too, but the client need not wait for it.
        if draining && open.isEmpty { context?.close(promise: nil) }
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
            guard open[streamID] != nil else { return }
            if let status = headers.headers.first(name: ":status").flatMap({ Int($0) }), open[streamID]!.answer.status == 0 {
                if status < 200 { return }  // informational
                open[streamID]!.answer.status = status
                open[streamID]!.answer.retryAfter = headers.headers.first(name: "retry-after")
            }
            if headers.endStream { finish(streamID) }
        case .data(let data):
            consumed += data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0)
            guard open[streamID] != nil, case .byteBuffer(let buffer) = data.data else { return }
            guard open[streamID]!.answer.body.readableBytes + buffer.readableBytes <= FCMExchange.maxAnswerBytes else {
                return fail(streamID, FCMExchange.TooLarge(), reset: .cancel)
            }
            if open[streamID]!.answer.body.readableBytes == 0 {
                open[streamID]!.answer.body = buffer
            } else {
                open[streamID]!.answer.body.writeImmutableBuffer(buffer)
            }
            if data.endStream { finish(streamID) }
        case .rstStream(let code):
            fail(streamID, NIOHTTP2Errors.streamClosed(streamID: frame.streamID, errorCode: code))
        case .goAway(let lastStreamID, _, _):
            goAway(lastStreamID: Int32(lastStreamID))
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams { maxStreams = min(max(1, setting.value), Self.streamLimit) }
            if let ready {
                self.ready = nil
                ready.succeed()
            }
            startWaiting()
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
        if let closed = event as? StreamClosedEvent, open[Int32(closed.streamID)] != nil {
            fail(Int32(closed.streamID), NIOHTTP2Errors.streamClosed(streamID: closed.streamID, errorCode: closed.reason ?? .cancel))
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// An error on one stream (its writes failed) fails that stream; any other (TLS, the connection,
    /// an HTTP/2 protocol error) closes the connection, which fails its open streams as not refused.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            return fail(Int32(streamError.streamID), streamError.baseError)
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

    // MARK: Endings

    /// No new streams; closes once the open ones end (at once if none is).
    func closeWhenIdle() {
        draining = true
        while let request = waiting.popFirst() { request.continuation.resume(throwing: Self.refused(0)) }
        if open.isEmpty { context?.close(promise: nil) }
    }

    /// No new streams; the streams past `lastStreamID` and the requests not yet written were not
    /// processed (RFC 9113, 6.8): refused.
    private func goAway(lastStreamID: Int32) {
        draining = true
        for streamID in open.keys where streamID > lastStreamID { fail(streamID, Self.refused(streamID)) }
        while let request = waiting.popFirst() { request.continuation.resume(throwing: Self.refused(0)) }
        if open.isEmpty { context?.close(promise: nil) }
    }

    /// The connection is gone: streams open fail as not refused (the server may have processed
    /// them), requests never written as refused.
    private func shutDown() {
        guard !closed else { return }
        closed = true
        deadlineCheck?.cancel()
        deadlineCheck = nil
        ready?.fail(HTTPClientError.remoteConnectionClosed)
        ready = nil
        let streams = open
        open = [:]
        for (_, stream) in streams { stream.request.continuation.resume(throwing: HTTPClientError.remoteConnectionClosed) }
        while let request = waiting.popFirst() { request.continuation.resume(throwing: Self.refused(0)) }
    }

    private func scheduleDeadlineCheck(on loop: any EventLoop) {
        deadlineCheck = loop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: checkInterval) {
            guard !self.closed else { return }
            self.failExpired()
            self.scheduleDeadlineCheck(on: loop)
        }
    }

    /// Fails the streams past their deadline (the requests still waiting for a stream have none yet).
    private func failExpired() {
        let now = NIODeadline.now()
        for (streamID, stream) in open where stream.deadline <= now {
            fail(streamID, HTTPClientError.deadlineExceeded, reset: .cancel)
        }
    }

    static func refused(_ streamID: Int32) -> NIOHTTP2Errors.StreamClosed {
        NIOHTTP2Errors.streamClosed(streamID: HTTP2StreamID(streamID), errorCode: .refusedStream)
    }
}
