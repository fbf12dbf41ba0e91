import AsyncHTTPClient
import NIOCore
import NIOHTTP2

/// The streams of one of the sender's HTTP/2 connections (``HTTP2Connection``), without I/O: which
/// request has which stream, which wait for one, what each answer holds, and when the connection is
/// done. The channel handler turns frames and calls into these events and carries out what they
/// return; every instant is passed in.
///
/// Invariants: at most the server's SETTINGS_MAX_CONCURRENT_STREAMS streams are open (with
/// `oneStreamUntilSuccess`, APNs' rule: one until a request on the connection was answered 200); more requests
/// wait, in order, with no deadline running (a request's deadline counts from when its stream is
/// written); after a GOAWAY nothing new is opened, the streams past its last stream id and the
/// requests still waiting fail as refused (re-sent at once on a new connection); a connection lost
/// fails its open streams as not refused (they may have been delivered) and its waiting requests as
/// refused. Every request is completed exactly once.
struct HTTP2StreamsStateMachine<Request> {
    /// What the handler does after an event, in this order: write the new streams, reset streams,
    /// complete requests, close the connection.
    struct Actions {
        var writes: [(streamID: Int32, request: Request)] = []
        var resets: [(streamID: Int32, code: HTTP2ErrorCode)] = []
        var completions: [(request: Request, result: Result<HTTP2Exchange.Answer, any Error>)] = []
        var close = false
    }

    private struct Stream {
        let id: UInt64
        var request: Request
        let deadline: NIODeadline
        var answer = HTTP2Exchange.Answer(status: 0, retryAfter: nil, body: ByteBuffer())
    }

    /// Streams open at once whatever the server allows.
    static var streamLimit: Int { 1 << 14 }

    private(set) var maxStreams = 100
    /// One stream at a time until ``succeeded``.
    let oneStreamUntilSuccess: Bool
    /// A request on this connection was answered 200.
    private(set) var succeeded = false
    private var nextStreamID: Int32 = 1
    private var open: [Int32: Stream] = [:]
    private var waiting = CircularBuffer<(id: UInt64, request: Request, timeout: TimeAmount)>()
    private var draining = false
    private(set) var closed = false

    init(oneStreamUntilSuccess: Bool = false) {
        self.oneStreamUntilSuccess = oneStreamUntilSuccess
    }

    /// Streams that may be open now.
    var allowedStreams: Int { oneStreamUntilSuccess && !succeeded ? 1 : maxStreams }

    var openStreams: Int { open.count }
    var waitingRequests: Int { waiting.count }

    /// Whether new requests may start here (no GOAWAY, not closed, stream ids left).
    var isAccepting: Bool { !draining && !closed && nextStreamID < Int32.max - 2 * Int32(maxStreams) }

    /// A request: a stream now, or a wait for one. Refused when the connection takes no more.
    mutating func start(_ request: Request, id: UInt64, timeout: TimeAmount, now: NIODeadline) -> Actions {
        var actions = Actions()
        guard isAccepting else {
            actions.completions.append((request, .failure(Self.refused(0))))
            return actions
        }
        if open.count < allowedStreams && waiting.isEmpty {
            write(request, id: id, timeout: timeout, now: now, &actions)
        } else {
            waiting.append((id, request, timeout))
        }
        return actions
    }

    /// Request `id` is cancelled: it fails, and its stream, if it has one, is reset.
    mutating func cancel(_ id: UInt64, now: NIODeadline) -> Actions {
        var actions = Actions()
        if let index = waiting.firstIndex(where: { $0.id == id }) {
            actions.completions.append((waiting.remove(at: index).request, .failure(CancellationError())))
        } else if let streamID = open.first(where: { $0.value.id == id })?.key {
            fail(streamID, CancellationError(), reset: .cancel, now: now, &actions)
        }
        return actions
    }

    /// The server's SETTINGS: its stream limit; waiting requests start while streams are free.
    mutating func settings(maxConcurrentStreams: Int?, now: NIODeadline) -> Actions {
        if let maxConcurrentStreams { maxStreams = min(max(1, maxConcurrentStreams), Self.streamLimit) }
        var actions = Actions()
        startWaiting(now: now, &actions)
        return actions
    }

    /// A HEADERS frame: the status (informational ones skipped), `Retry-After` and `apns-id` of the
    /// first final one.
    mutating func headers(_ streamID: Int32, status: Int?, retryAfter: String?, id: String? = nil, endStream: Bool, now: NIODeadline) -> Actions {
        var actions = Actions()
        guard open[streamID] != nil else { return actions }
        if let status, open[streamID]!.answer.status == 0 {
            if status < 200 { return actions }  // informational
            open[streamID]!.answer.status = status
            open[streamID]!.answer.retryAfter = retryAfter
            open[streamID]!.answer.id = id
        }
        if endStream { finish(streamID, now: now, &actions) }
        return actions
    }

    /// A DATA frame of an answer: collected up to ``HTTP2Exchange/maxAnswerBytes`` (beyond, the stream
    /// fails and is reset).
    mutating func data(_ streamID: Int32, _ buffer: ByteBuffer, endStream: Bool, now: NIODeadline) -> Actions {
        var actions = Actions()
        guard open[streamID] != nil else { return actions }
        guard open[streamID]!.answer.body.readableBytes + buffer.readableBytes <= HTTP2Exchange.maxAnswerBytes else {
            fail(streamID, HTTP2Exchange.TooLarge(), reset: .cancel, now: now, &actions)
            return actions
        }
        if open[streamID]!.answer.body.readableBytes == 0 {
            open[streamID]!.answer.body = buffer
        } else {
            open[streamID]!.answer.body.writeImmutableBuffer(buffer)
        }
        if endStream { finish(streamID, now: now, &actions) }
        return actions
    }

    /// The stream ended without a complete answer: reset by the server (`code`), or closed by the
    /// HTTP/2 handler, or failed writing.
    mutating func streamFailed(_ streamID: Int32, _ error: any Error, now: NIODeadline) -> Actions {
        var actions = Actions()
        fail(streamID, error, reset: nil, now: now, &actions)
        return actions
    }

    /// GOAWAY: no new streams; the streams past `lastStreamID` and the requests not yet written were
    /// not processed (RFC 9113, 6.8): refused.
    mutating func goAway(lastStreamID: Int32) -> Actions {
        draining = true
        var actions = Actions()
        for streamID in open.keys.sorted() where streamID > lastStreamID {
            actions.completions.append((open.removeValue(forKey: streamID)!.request, .failure(Self.refused(streamID))))
        }
        refuseWaiting(&actions)
        actions.close = open.isEmpty
        return actions
    }

    /// No new streams; closes once the open ones end (at once if none is).
    mutating func closeWhenIdle() -> Actions {
        draining = true
        var actions = Actions()
        refuseWaiting(&actions)
        actions.close = open.isEmpty
        return actions
    }

    /// The connection is gone: open streams fail as not refused (the server may have processed them),
    /// requests never written as refused.
    mutating func connectionClosed(_ error: any Error) -> Actions {
        var actions = Actions()
        guard !closed else { return actions }
        closed = true
        for streamID in open.keys.sorted() { actions.completions.append((open.removeValue(forKey: streamID)!.request, .failure(error))) }
        refuseWaiting(&actions)
        return actions
    }

    /// Fails the streams past their deadline (the requests still waiting for a stream have none yet).
    mutating func expire(now: NIODeadline) -> Actions {
        var actions = Actions()
        for (streamID, stream) in open where stream.deadline <= now {
            fail(streamID, HTTPClientError.deadlineExceeded, reset: .cancel, now: now, &actions)
        }
        return actions
    }

    // MARK: Helpers

    private mutating func write(_ request: Request, id: UInt64, timeout: TimeAmount, now: NIODeadline, _ actions: inout Actions) {
        let streamID = nextStreamID
        nextStreamID += 2
        open[streamID] = Stream(id: id, request: request, deadline: now + timeout)
        actions.writes.append((streamID, request))
    }

    private mutating func startWaiting(now: NIODeadline, _ actions: inout Actions) {
        while open.count < allowedStreams, isAccepting, let next = waiting.popFirst() { write(next.request, id: next.id, timeout: next.timeout, now: now, &actions) }
    }

    private mutating func refuseWaiting(_ actions: inout Actions) {
        while let next = waiting.popFirst() { actions.completions.append((next.request, .failure(Self.refused(0)))) }
    }

    private mutating func finish(_ streamID: Int32, now: NIODeadline, _ actions: inout Actions) {
        guard let stream = open.removeValue(forKey: streamID) else { return }
        if stream.answer.status == 200 { succeeded = true }
        actions.completions.append((stream.request, .success(stream.answer)))
        afterStreamClosed(now: now, &actions)
    }

    private mutating func fail(_ streamID: Int32, _ error: any Error, reset: HTTP2ErrorCode?, now: NIODeadline, _ actions: inout Actions) {
        guard let stream = open.removeValue(forKey: streamID) else { return }
        if let reset { actions.resets.append((streamID, reset)) }
        actions.completions.append((stream.request, .failure(error)))
        afterStreamClosed(now: now, &actions)
    }

    private mutating func afterStreamClosed(now: NIODeadline, _ actions: inout Actions) {
        if !waiting.isEmpty { startWaiting(now: now, &actions) }
        // Gone away and done: the server closes too, but the client need not wait for it.
        if draining && open.isEmpty { actions.close = true }
    }

    static func refused(_ streamID: Int32) -> NIOHTTP2Errors.StreamClosed {
        NIOHTTP2Errors.streamClosed(streamID: HTTP2StreamID(streamID), errorCode: .refusedStream)
    }
}
