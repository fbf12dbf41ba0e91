import NIOCore
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 connection of a fake service (``FakeHTTPService``) at the frame level, after
/// `NIOHTTP2Handler`: collects each stream's HEADERS and DATA, asks the service for the reply and
/// writes it (after the injected delay) as HEADERS (and DATA for a body), or, for a dropped request,
/// resets the stream or closes the connection (``FakeHTTPServer/Connections/dropClosesConnection``).
/// No stream channel or HTTP/1 codec per request.
///
/// Under ``FakeHTTPServer/StreamLimit/oneUntilFirstSuccess(then:)`` it keeps the streams to what it
/// advertised, as APNs does: one at a time until the first request answered 200, then the raised
/// limit (a new SETTINGS frame says so); a stream opened beyond that is reset with REFUSED_STREAM and
/// the connection stays.
///
/// When asked (``FakeHTTPServer/goAway()``) it sends GOAWAY naming the newest stream the client
/// opened, answers the streams up to it and then closes the connection, as FCM does when it recycles
/// one. The HTTP/2 handler ignores streams the client opens after the GOAWAY, and the client sees
/// them refused.
final class FakeHTTP2Handler<Service: FakeHTTPService>: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct Request {
        var method = ""
        var path = ""
        var headers: [(String, String)] = []
        var body: [UInt8] = []
        var bodyLength = 0
        /// DATA bytes not yet given back to the stream's window.
        var unacknowledged = 0
    }

    /// Requests being received, by stream.
    private var receiving: [Int32: Request] = [:]
    /// Streams received and not yet answered (or reset by the client).
    private var answering: Set<Int32> = []
    private var newest: Int32 = 0
    private var wentAway = false
    private var consumed = 0
    /// The SETTINGS_MAX_CONCURRENT_STREAMS the client was told, when this handler keeps to it (nil:
    /// NIO does).
    private var streamLimit: Int?
    /// The limit after the first success, until it is raised.
    private var raisedLimit: Int?
    private var mostStreams = 0
    private var windowOpened = false
    private var connection: Service.ConnectionState
    private var context: ChannelHandlerContext?
    private let service: Service
    private let server: FakeHTTPServer
    private let dropClosesConnection: Bool
    private let unindexedHeaders: Set<String>
    private var id: ObjectIdentifier { ObjectIdentifier(self) }

    /// `raisedLimit`: the streams allowed after the first success, one before it (nil: NIO keeps the
    /// connection to the limit it advertised).
    init(service: Service, server: FakeHTTPServer, connections: FakeHTTPServer.Connections, raisedLimit: Int?) {
        self.service = service
        self.server = server
        self.connection = service.newConnection()
        self.dropClosesConnection = connections.dropClosesConnection
        self.unindexedHeaders = connections.unindexedHeaders
        self.raisedLimit = raisedLimit
        self.streamLimit = raisedLimit == nil ? nil : 1
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        server.opened(
            id, .init(goAway: { loop.execute { bound.value.goAway() } }, close: { loop.execute { bound.value.context?.close(promise: nil) } }))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        server.closed(id)
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        server.closed(id)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // NIO's stream errors (a malformed header block, …) have reset their stream already.
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            let streamID = Int32(streamError.streamID)
            receiving[streamID] = nil
            answering.remove(streamID)
        }
        context.fireErrorCaught(error)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let streamID = Int32(frame.streamID)
        if streamLimit != nil { openConnectionWindow(context: context) }
        switch frame.payload {
        case .headers(let headers):
            if receiving[streamID] == nil && !answering.contains(streamID) {
                guard streamID > newest else { return }  // trailers of a stream already answered
                newest = streamID
                if let streamLimit, receiving.count + answering.count >= streamLimit {
                    // Beyond SETTINGS_MAX_CONCURRENT_STREAMS: refused, the connection stays (RFC 9113 §5.1.2).
                    server.refusedStream()
                    context.write(wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .rstStream(.refusedStream))), promise: nil)
                    scheduleFlush(context: context)
                    return
                }
                var request = Request()
                for (name, value, _) in headers.headers {
                    switch name {
                    case ":method": request.method = value
                    case ":path": request.path = value
                    case _ where name.hasPrefix(":"): break
                    default: request.headers.append((name, value))
                    }
                }
                receiving[streamID] = request
                let open = receiving.count + answering.count
                if open > mostStreams {
                    mostStreams = open
                    server.streamsOpen(open)
                }
            }
            if headers.endStream { received(streamID, context: context) }
        case .data(let data):
            let length = data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0)
            consumed += length
            guard receiving[streamID] != nil, case .byteBuffer(let buffer) = data.data else { return }
            receiving[streamID]!.bodyLength += buffer.readableBytes
            if receiving[streamID]!.body.count + buffer.readableBytes <= FakeRequest.maxKeptBody {
                buffer.withUnsafeReadableBytes { receiving[streamID]!.body.append(contentsOf: $0) }
            }
            receiving[streamID]!.unacknowledged += length
            if data.endStream {
                received(streamID, context: context)
            } else if receiving[streamID]!.unacknowledged >= 1 << 15 {
                let increment = receiving[streamID]!.unacknowledged
                receiving[streamID]!.unacknowledged = 0
                context.write(wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .windowUpdate(windowSizeIncrement: increment))), promise: nil)
                scheduleFlush(context: context)
            }
        case .rstStream:
            receiving[streamID] = nil
            answering.remove(streamID)
            closeIfIdle(context: context)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Give back what the requests used of the connection window.
        if consumed >= 1 << 15 {
            let increment = consumed
            consumed = 0
            context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))), promise: nil)
        }
        context.fireChannelReadComplete()
    }

    /// A large connection window from the client's first frame on, when this handler refuses streams:
    /// the DATA of refused streams, which NIO discards before this handler sees it, then never starves
    /// the others.
    private func openConnectionWindow(context: ChannelHandlerContext) {
        guard !windowOpened else { return }
        windowOpened = true
        context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: 1 << 30))), promise: nil)
        scheduleFlush(context: context)
    }

    /// A whole request: the service's reply now or after its delay.
    private func received(_ streamID: Int32, context: ChannelHandlerContext) {
        guard let received = receiving.removeValue(forKey: streamID) else { return }
        answering.insert(streamID)
        let request = FakeRequest(
            method: received.method, path: FakeRequest.path(received.path), headers: received.headers, body: received.body,
            bodyLength: received.bodyLength, http2: true)
        let counted = service.counts(request)
        if counted { server.began() }
        let reply = service.reply(to: request, on: &connection)
        let delay = reply.delay
        if delay > 0 {
            later(Delayed(due: .now() + .milliseconds(Int64(delay)), streamID: streamID, reply: reply, counted: counted), context: context)
        } else {
            respond(streamID, reply, counted: counted)
        }
    }

    // MARK: Delayed answers

    private struct Delayed {
        let due: NIODeadline
        let streamID: Int32
        let reply: FakeReply
        let counted: Bool
    }

    /// Answers waiting for their delay, by due time; one timer for the earliest, not one a request.
    private var delayed: [Delayed] = []
    private var timer: (due: NIODeadline, task: Scheduled<Void>)?

    private func later(_ answer: Delayed, context: ChannelHandlerContext) {
        var index = delayed.endIndex
        while index > delayed.startIndex && delayed[index - 1].due > answer.due { index -= 1 }
        delayed.insert(answer, at: index)
        if timer.map({ answer.due < $0.due }) ?? true { schedule(answer.due, on: context.eventLoop) }
    }

    private func schedule(_ due: NIODeadline, on loop: any EventLoop) {
        timer?.task.cancel()
        let task = loop.assumeIsolatedUnsafeUnchecked().scheduleTask(deadline: due) { self.answerDue(on: loop) }
        timer = (due, task)
    }

    private func answerDue(on loop: any EventLoop) {
        timer = nil
        let now = NIODeadline.now()
        let count = delayed.prefix { $0.due <= now }.count
        let due = delayed[..<count]
        delayed.removeFirst(count)
        for answer in due { respond(answer.streamID, answer.reply, counted: answer.counted) }
        if let next = delayed.first { schedule(next.due, on: loop) }
    }

    private func respond(_ streamID: Int32, _ reply: FakeReply, counted: Bool) {
        if counted { server.answered() }
        guard answering.remove(streamID) != nil, let context else { return }
        let id = HTTP2StreamID(streamID)
        switch reply {
        case .drop where dropClosesConnection:
            // Closed without an answer: every stream of the connection goes with it.
            context.close(promise: nil)
            return
        case .drop:
            // A dropped request on HTTP/2: its stream is reset, the connection stays.
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
        case .answer(let status, let headers, let text, _):
            if counted && status == 200, let raised = raisedLimit {
                // The first success on this connection: as many streams as the server allows from now on
                // (NIO is told a limit it never reaches; the client reads the raised one). Written just
                // before the answer, while the client's stream is still open: async-http-client 1.x
                // asserts (debug builds) when a SETTINGS change reaches a connection it holds idle.
                raisedLimit = nil
                streamLimit = raised
                let setting = HTTP2Setting(parameter: .maxConcurrentStreams, value: FakeHTTPServer.unenforcedStreamLimit)
                context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([setting])))), promise: nil)
            }
            var fields = HPACKHeaders()
            fields.reserveCapacity(headers.count + 2)
            fields.add(name: ":status", value: String(status))
            for (name, value) in headers {
                let name = name.lowercased()
                fields.add(name: name, value: value, indexing: unindexedHeaders.contains(name) ? .nonIndexable : .indexable)
            }
            if text.isEmpty {
                context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: fields, endStream: true)))), promise: nil)
            } else {
                let body = context.channel.allocator.buffer(string: text)
                fields.add(name: "content-length", value: String(body.readableBytes))
                context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: fields)))), promise: nil)
                context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(body), endStream: true)))), promise: nil)
            }
        }
        scheduleFlush(context: context)
        closeIfIdle(context: context)
    }

    private var flushPending = false

    /// One flush for the answers written in this turn of the event loop.
    private func scheduleFlush(context: ChannelHandlerContext) {
        guard !flushPending else { return }
        flushPending = true
        context.eventLoop.assumeIsolatedUnsafeUnchecked().execute {
            self.flushPending = false
            self.context?.flush()
        }
    }

    /// GOAWAY (no error) naming the newest stream opened so far, then a close once those are
    /// answered; once per connection.
    private func goAway() {
        guard let context, !wentAway else { return }
        wentAway = true
        server.wentAway()
        let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: HTTP2StreamID(newest), errorCode: .noError, opaqueData: nil))
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        closeIfIdle(context: context)
    }

    private func closeIfIdle(context: ChannelHandlerContext) {
        guard wentAway, receiving.isEmpty, answering.isEmpty else { return }
        // After the answers already written.
        context.eventLoop.assumeIsolatedUnsafeUnchecked().execute { self.context?.close(promise: nil) }
    }
}
