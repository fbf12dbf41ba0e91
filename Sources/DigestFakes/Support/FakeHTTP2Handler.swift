import NIOCore
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 connection of a fake service (``FakeHTTPService``: the fake FCM, the fake Web Push
/// service) at the frame level, after `NIOHTTP2Handler`: collects
/// each stream's HEADERS and DATA, asks the server for the reply and writes it (after the injected
/// delay) as HEADERS and DATA, or resets the stream for a dropped one. No stream channel or HTTP/1
/// codec per request.
///
/// When asked (the service's `goAway()`) it sends GOAWAY naming the newest stream the client
/// opened, answers the streams up to it and then closes the connection, as FCM does when it recycles
/// one. The HTTP/2 handler ignores streams the client opens after the GOAWAY, and the client sees
/// them refused.
final class FakeHTTP2Handler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct Request {
        var method = ""
        var path = ""
        var headers: [(String, String)] = []
        var body: [UInt8] = []
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
    private var context: ChannelHandlerContext?
    private let server: any FakeHTTPService
    private var id: ObjectIdentifier { ObjectIdentifier(self) }

    init(server: any FakeHTTPService) { self.server = server }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        server.connectionOpened(id) { loop.execute { bound.value.goAway() } }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        server.connectionClosed(id)
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        server.connectionClosed(id)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let streamID = Int32(frame.streamID)
        switch frame.payload {
        case .headers(let headers):
            if receiving[streamID] == nil && !answering.contains(streamID) {
                guard streamID > newest else { return }  // trailers of a stream already answered
                newest = streamID
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
            }
            if headers.endStream { received(streamID, context: context) }
        case .data(let data):
            let length = data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0)
            consumed += length
            guard receiving[streamID] != nil, case .byteBuffer(let buffer) = data.data else { return }
            if receiving[streamID]!.body.count + buffer.readableBytes <= 1 << 20 {
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

    /// A whole request: the server's reply now or after its delay.
    private func received(_ streamID: Int32, context: ChannelHandlerContext) {
        guard let request = receiving.removeValue(forKey: streamID) else { return }
        answering.insert(streamID)
        let path = String(request.path.split(separator: "?", maxSplits: 1).first ?? "")
        let isSend = server.counts(path: path)
        let reply = server.reply(method: request.method, path: path, headers: request.headers, body: request.body, http2: true)
        let delay = reply.delay
        if delay > 0 {
            later(Delayed(due: .now() + .milliseconds(Int64(delay)), streamID: streamID, reply: reply, isSend: isSend), context: context)
        } else {
            respond(streamID, reply, isSend: isSend)
        }
    }

    // MARK: Delayed answers

    private struct Delayed {
        let due: NIODeadline
        let streamID: Int32
        let reply: FakeReply
        let isSend: Bool
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
        for answer in due { respond(answer.streamID, answer.reply, isSend: answer.isSend) }
        if let next = delayed.first { schedule(next.due, on: loop) }
    }

    private func respond(_ streamID: Int32, _ reply: FakeReply, isSend: Bool) {
        if isSend { server.answered() }
        guard answering.remove(streamID) != nil, let context else { return }
        let id = HTTP2StreamID(streamID)
        switch reply {
        case .drop:
            // A dropped request on HTTP/2: its stream is reset, the connection stays.
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
        case .answer(let status, let headers, let text, _):
            var fields = HPACKHeaders()
            fields.reserveCapacity(headers.count + 2)
            fields.add(name: ":status", value: String(status))
            for (name, value) in headers { fields.add(name: name.lowercased(), value: value) }
            let body = context.channel.allocator.buffer(string: text)
            fields.add(name: "content-length", value: String(body.readableBytes))
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: fields)))), promise: nil)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(body), endStream: true)))), promise: nil)
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
        server.countGoAway()
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
