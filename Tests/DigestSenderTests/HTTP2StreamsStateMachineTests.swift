import AsyncHTTPClient
@_spi(Benchmarks) @testable import DigestSender
import NIOCore
import NIOHTTP2
import Testing

/// The streams of one of the sender's HTTP/2 connections, without I/O, on fixed instants.
@Suite struct HTTP2StreamsStateMachineTests {
    typealias Machine = HTTP2StreamsStateMachine<Int>

    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static func refused(_ result: Result<HTTP2Exchange.Answer, any Error>) -> Bool {
        guard case .failure(let error) = result else { return false }
        return (error as? NIOHTTP2Errors.StreamClosed)?.errorCode == .refusedStream
    }

    /// Starts requests 1...count at `t0` with a 100 ms deadline.
    static func started(_ count: Int, maxStreams: Int) -> (Machine, [Int32: Int]) {
        var machine = Machine()
        _ = machine.settings(maxConcurrentStreams: maxStreams, now: t0)
        var streams: [Int32: Int] = [:]
        for request in 1...count {
            for (streamID, written) in machine.start(request, id: UInt64(request), timeout: .milliseconds(100), now: t0).writes { streams[streamID] = written }
        }
        return (machine, streams)
    }

    @Test func atMostTheServersStreamsAreOpenAndTheOthersWaitInOrder() {
        var (machine, streams) = Self.started(4, maxStreams: 2)
        #expect(streams == [1: 1, 3: 2] && machine.waitingRequests == 2)
        _ = machine.headers(1, status: 100, retryAfter: nil, endStream: false, now: Self.t0)  // informational: skipped
        var done = machine.headers(1, status: 503, retryAfter: "30", endStream: false, now: Self.t0)
        #expect(done.completions.isEmpty)
        done = machine.data(1, ByteBuffer(string: "{}"), endStream: true, now: Self.t0)
        guard case .success(let answer)? = done.completions.first?.result else { Issue.record("\(done.completions)"); return }
        #expect(done.completions.first?.request == 1 && answer.status == 503 && answer.retryAfter == "30" && String(buffer: answer.body) == "{}")
        #expect(done.writes.map(\.streamID) == [5] && done.writes.map(\.request) == [3])  // the first waiting one
    }

    /// A request's deadline counts from when its stream is written, not from when it started waiting.
    @Test func aDeadlineCountsFromTheWrite() {
        var (machine, _) = Self.started(2, maxStreams: 1)
        let later = Self.t0 + .seconds(1)
        let freed = machine.headers(1, status: 200, retryAfter: nil, endStream: true, now: later)
        #expect(freed.writes.map(\.request) == [2])
        #expect(machine.expire(now: later + .milliseconds(99)).completions.isEmpty)
        let expired = machine.expire(now: later + .milliseconds(100))
        guard case .failure(let error)? = expired.completions.first?.result else { Issue.record(); return }
        #expect((error as? HTTPClientError) == .deadlineExceeded && expired.resets.map(\.streamID) == [3])
    }

    @Test func aGoAwayRefusesTheStreamsPastItsLastAndTheWaitingAndClosesOnceTheOthersEnd() {
        var (machine, _) = Self.started(4, maxStreams: 3)
        let gone = machine.goAway(lastStreamID: 3)
        #expect(gone.completions.map(\.request) == [3, 4] && gone.completions.allSatisfy { Self.refused($0.result) })
        #expect(!gone.close && !machine.isAccepting)
        let late = machine.start(9, id: 9, timeout: .seconds(1), now: Self.t0)
        #expect(late.completions.map(\.request) == [9] && Self.refused(late.completions[0].result))
        _ = machine.headers(1, status: 200, retryAfter: nil, endStream: true, now: Self.t0)
        let last = machine.headers(3, status: 200, retryAfter: nil, endStream: true, now: Self.t0)
        #expect(last.completions.map(\.request) == [2] && last.close)
    }

    /// A lost connection: open streams may have been processed (not refused), waiting ones were not.
    @Test func aLostConnectionFailsOpenStreamsAsNotRefusedAndWaitingOnesAsRefused() {
        var (machine, _) = Self.started(3, maxStreams: 2)
        let lost = machine.connectionClosed(HTTPClientError.remoteConnectionClosed)
        #expect(lost.completions.map(\.request) == [1, 2, 3])
        #expect(lost.completions.map { Self.refused($0.result) } == [false, false, true])
        #expect(machine.connectionClosed(HTTPClientError.remoteConnectionClosed).completions.isEmpty)  // once
    }

    @Test func aTooLargeAnswerFailsAndResetsItsStreamAndACancelledRequestLeaves() {
        var (machine, _) = Self.started(3, maxStreams: 2)
        let big = machine.data(1, ByteBuffer(repeating: 0, count: HTTP2Exchange.maxAnswerBytes + 1), endStream: false, now: Self.t0)
        #expect(big.resets.map(\.streamID) == [1] && big.completions.map(\.request) == [1] && big.writes.map(\.request) == [3])
        let cancelled = machine.cancel(3, now: Self.t0)
        #expect(cancelled.resets.map(\.streamID) == [5] && cancelled.completions.map(\.request) == [3])
        #expect(machine.cancel(3, now: Self.t0).completions.isEmpty && machine.openStreams == 1)
    }

    /// APNs' rule: one stream until a request on the connection was answered 200, whatever the
    /// server's SETTINGS say; then the server's limit. Other answers (400, 403) prove nothing.
    @Test func oneStreamUntilTheFirst200ThenTheServersLimit() {
        var machine = Machine(oneStreamUntilSuccess: true)
        _ = machine.settings(maxConcurrentStreams: 3, now: Self.t0)
        var writes: [Int] = []
        for request in 1...6 { writes += machine.start(request, id: UInt64(request), timeout: .seconds(1), now: Self.t0).writes.map(\.request) }
        #expect(writes == [1] && machine.waitingRequests == 5)
        let refused = machine.headers(1, status: 400, retryAfter: nil, endStream: true, now: Self.t0)
        #expect(refused.writes.map(\.request) == [2] && machine.allowedStreams == 1)
        let sent = machine.headers(3, status: 200, retryAfter: nil, id: "a-b", endStream: true, now: Self.t0)
        guard case .success(let answer)? = sent.completions.first?.result else { Issue.record("\(sent.completions)"); return }
        #expect(answer.id == "a-b" && sent.writes.map(\.request) == [3, 4, 5] && machine.openStreams == 3)
        // Later SETTINGS still bound it.
        _ = machine.settings(maxConcurrentStreams: 2, now: Self.t0)
        let next = machine.headers(5, status: 200, retryAfter: nil, endStream: true, now: Self.t0)
        #expect(next.writes.isEmpty && machine.waitingRequests == 1)
        #expect(machine.headers(7, status: 200, retryAfter: nil, endStream: true, now: Self.t0).writes.map(\.request) == [6])
    }
}
