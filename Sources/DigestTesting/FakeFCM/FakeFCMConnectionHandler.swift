import NIOCore
import NIOHTTP2
import Synchronization

/// One HTTP/2 connection of the fake FCM server, after the HTTP/2 handler: when asked
/// (``FakeFCMServer/goAway()``) it sends GOAWAY naming the newest stream the client opened, answers
/// the streams up to it and then closes the connection, as FCM does when it recycles one. The HTTP/2
/// handler ignores streams the client opens after the GOAWAY, and the client sees them refused.
final class FakeFCMConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let server: FakeFCMServer
    private var context: ChannelHandlerContext?
    private var wentAway = false
    private var id: ObjectIdentifier { ObjectIdentifier(self) }
    /// Told of each stream the client opens and closes (the HTTP/2 handler's stream delegate).
    let streams = StreamFollower()

    init(server: FakeFCMServer) { self.server = server }

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

    /// GOAWAY (no error) naming the newest stream opened so far, then a close once those are answered;
    /// once per connection.
    private func goAway() {
        guard let context, !wentAway else { return }
        wentAway = true
        server.countGoAway()
        let channel = context.channel
        let last = streams.goingAway { channel.eventLoop.execute { channel.close(promise: nil) } }
        let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: last, errorCode: .noError, opaqueData: nil))
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
    }
}

/// The streams open on one connection and the newest one; after GOAWAY, calls back once none is open.
final class StreamFollower: NIOHTTP2StreamDelegate, Sendable {
    private struct State {
        var newest: Int32 = 0
        var open = 0
        var whenIdle: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    func streamCreated(_ id: HTTP2StreamID, channel: any Channel) {
        state.withLock { state in
            state.newest = max(state.newest, Int32(id))
            state.open += 1
        }
    }

    func streamClosed(_ id: HTTP2StreamID, channel: any Channel) {
        let idle = state.withLock { state -> (@Sendable () -> Void)? in
            state.open -= 1
            guard state.open == 0, let idle = state.whenIdle else { return nil }
            state.whenIdle = nil
            return idle
        }
        idle?()
    }

    /// The newest stream; `whenIdle` runs once no stream is open (at once if none is).
    func goingAway(whenIdle: @escaping @Sendable () -> Void) -> HTTP2StreamID {
        let (newest, idleNow) = state.withLock { state -> (Int32, Bool) in
            if state.open > 0 { state.whenIdle = whenIdle }
            return (state.newest, state.open == 0)
        }
        if idleNow { whenIdle() }
        return HTTP2StreamID(newest)
    }
}
