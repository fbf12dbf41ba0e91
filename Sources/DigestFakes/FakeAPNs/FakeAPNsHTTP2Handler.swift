import NIOCore
import NIOHPACK
import NIOHTTP2

/// One connection of the fake APNs server at the HTTP/2 frame level, after `NIOHTTP2Handler`:
/// collects each stream's HEADERS and DATA, asks the server for the reply and writes it (after the
/// injected delay) as HEADERS (and DATA for an error's JSON), or closes the connection for a dropped
/// request.
///
/// It keeps the streams to what it advertised, as APNs does: one at a time until the first request
/// answered 200, then `maxConcurrentStreams` (a new SETTINGS frame says so). A stream opened beyond
/// that is reset with REFUSED_STREAM; the connection stays.
///
/// On ``FakeAPNsServer/goAway()`` it sends GOAWAY naming the newest stream the client opened, answers
/// the streams up to it and then closes the connection.
final class FakeAPNsHTTP2Handler: ChannelInboundHandler {
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
    /// The SETTINGS_MAX_CONCURRENT_STREAMS the client was told.
    private var streamLimit = 1
    private var raised = false
    private var mostStreams = 0
    /// The provider tokens this connection has used (Apple limits their updates per connection).
    private var tokens = FakeAPNsServer.ConnectionTokens()
    private let maxConcurrentStreams: Int
    private var context: ChannelHandlerContext?
    private let server: FakeAPNsServer
    private var id: ObjectIdentifier { ObjectIdentifier(self) }

    init(server: FakeAPNsServer, maxConcurrentStreams: Int) {
        self.server = server
        self.maxConcurrentStreams = maxConcurrentStreams
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        server.connectionOpened(
            id,
            .init(goAway: { loop.execute { bound.value.goAway() } }, close: { loop.execute { bound.value.context?.close(promise: nil) } }))
    }

    private var windowOpened = false

    /// A large connection window from the client's first frame on: the DATA of refused streams, which
    /// NIO discards before this handler sees it, then never starves the others.
    private func openConnectionWindow(context: ChannelHandlerContext) {
        guard !windowOpened else { return }
        windowOpened = true
        context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: 1 << 30))), promise: nil)
        scheduleFlush(context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        server.connectionClosed(id)
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        server.connectionClosed(id)
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
        openConnectionWindow(context: context)
        switch frame.payload {
        case .headers(let headers):
            if receiving[streamID] == nil && !answering.contains(streamID) {
                guard streamID > newest else { return }  // trailers of a stream already answered
                newest = streamID
                if receiving.count + answering.count >= streamLimit {
                    // Beyond SETTINGS_MAX_CONCURRENT_STREAMS: refused, the connection stays (RFC 9113 §5.1.2).
                    server.countRefusedStream()
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
                    server.streamsUsed(open)
                }
            }
            if headers.endStream { received(streamID, context: context) }
        case .data(let data):
            let length = data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0)
            consumed += length
            guard receiving[streamID] != nil, case .byteBuffer(let buffer) = data.data else { return }
            receiving[streamID]!.bodyLength += buffer.readableBytes
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
        let reply = server.reply(method: request.method, path: request.path, headers: request.headers, body: request.body,
                                 bodyLength: request.bodyLength, tokens: &tokens)
        let delay: Int
        switch reply {
        case .drop(let milliseconds), .answer(_, let milliseconds, _, _): delay = milliseconds
        }
        if delay > 0 {
            later(Delayed(due: .now() + .milliseconds(Int64(delay)), streamID: streamID, reply: reply), context: context)
        } else {
            respond(streamID, reply)
        }
    }

    // MARK: Delayed answers

    private struct Delayed {
        let due: NIODeadline
        let streamID: Int32
        let reply: FakeAPNsServer.Reply
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
        for answer in due { respond(answer.streamID, answer.reply) }
        if let next = delayed.first { schedule(next.due, on: loop) }
    }

    private func respond(_ streamID: Int32, _ reply: FakeAPNsServer.Reply) {
        switch reply {
        case .drop: server.answered()
        case .answer(_, _, let counted, _): if counted { server.answered() }
        }
        guard answering.remove(streamID) != nil, let context else { return }
        let id = HTTP2StreamID(streamID)
        switch reply {
        case .drop:
            // Closed without an answer: every stream of the connection goes with it.
            context.close(promise: nil)
            return
        case .answer(let answer, _, _, let accepted):
            if accepted && !raised {
                // The first success on this connection: as many streams as the server allows from now on
                // (NIO is told a limit it never reaches; the client reads `maxConcurrentStreams`). Written
                // just before the answer, while the client's stream is still open: async-http-client
                // 1.x asserts (debug builds) when a SETTINGS change reaches a connection it holds idle.
                raised = true
                streamLimit = maxConcurrentStreams
                let setting = HTTP2Setting(parameter: .maxConcurrentStreams, value: FakeAPNsServer.unenforcedStreamLimit)
                context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([setting])))), promise: nil)
            }
            var fields = HPACKHeaders()
            fields.reserveCapacity(answer.headers.count + 2)
            fields.add(name: ":status", value: String(answer.status))
            // `apns-id` is new in every answer: a literal, not an entry that pushes the others out of
            // both sides' HPACK tables (as Apple's own encoder may or may not do: a client decodes either).
            for (name, value) in answer.headers { fields.add(name: name, value: value, indexing: name == "apns-id" ? .nonIndexable : .indexable) }
            if answer.body.isEmpty {
                context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: fields, endStream: true)))), promise: nil)
            } else {
                let body = context.channel.allocator.buffer(string: answer.body)
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

/// Between TLS and `NIOHTTP2Handler`: rewrites SETTINGS_MAX_CONCURRENT_STREAMS in the SETTINGS frames
/// the server sends, so the client reads APNs's numbers (1 in the first, then `raisedLimit`) while
/// NIO's connection state machine holds a limit it never reaches (NIO treats a stream beyond its limit
/// as a connection error; APNs, and the fake's frame handler, refuse just that stream).
///
/// It follows the outbound byte stream frame by frame (9-byte headers, payloads skipped), whatever
/// the writes' boundaries.
final class APNsSettingsRewriter: ChannelOutboundHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let raisedLimit: UInt32
    private var settingsFramesSeen = 0
    /// The frame header being read (fewer than 9 bytes so far).
    private var header: [UInt8] = []
    /// Payload bytes of the current frame still to come.
    private var payloadLeft = 0
    /// Inside a SETTINGS payload: the offset reached in it, and the current entry's identifier bytes.
    private var inSettings = false
    private var settingsOffset = 0
    private var entryID: UInt16 = 0

    init(raisedLimit: Int) { self.raisedLimit = UInt32(clamping: raisedLimit) }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(var buffer) = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        var index = buffer.readerIndex
        let end = buffer.writerIndex
        while index < end {
            if payloadLeft == 0 {
                header.append(buffer.getInteger(at: index)!)
                index += 1
                if header.count == 9 {
                    payloadLeft = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
                    // SETTINGS (type 4) without ACK (flag 1).
                    inSettings = header[3] == 0x4 && header[4] & 0x1 == 0
                    if inSettings { settingsFramesSeen += 1 }
                    settingsOffset = 0
                    header.removeAll(keepingCapacity: true)
                }
            } else if inSettings {
                let position = settingsOffset % 6
                let byte: UInt8 = buffer.getInteger(at: index)!
                switch position {
                case 0: entryID = UInt16(byte) << 8
                case 1: entryID |= UInt16(byte)
                default:
                    if entryID == 0x3 {  // SETTINGS_MAX_CONCURRENT_STREAMS
                        let value: UInt32 = settingsFramesSeen == 1 ? 1 : raisedLimit
                        buffer.setInteger(UInt8(truncatingIfNeeded: value >> (8 * UInt32(5 - position))), at: index)
                    }
                }
                settingsOffset += 1
                payloadLeft -= 1
                index += 1
            } else {
                let skip = min(payloadLeft, end - index)
                payloadLeft -= skip
                index += skip
            }
        }
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
    }
}
