import DigestNIO
import NIOCore

/// The sender's connections as lanes: each lane is one exchange (over https its own HTTP/2
/// connection, else one HTTP client: async-http-client keeps at most one HTTP/2 connection per event
/// loop in a client, so several clients make several connections) on one of the client's event
/// loops, with an equal share of the requests in flight (its gate) and of the messages started
/// (`open`); the next message goes to the lane with the most room.
///
/// A message's task runs on its lane's loop and its request prefers that loop, so its writes and its
/// answer stay on one thread instead of hopping to a connection on another loop and back (with a
/// round-robin choice of loop, such hops took about an eighth of the loops' time). With one client
/// (HTTP/1.1 to a loopback server, say) there is a lane per event loop and the client's pool grows
/// about as many connections on each loop as the loop has requests.
struct RequestLanes {
    struct Lane {
        let executor: EventLoopExecutor
        let exchange: FCMExchange
        /// This lane's share of the requests in flight: at most the server's streams a connection.
        let gate: AsyncGate
        /// Messages this lane may have started and not finished (requests and answers not yet written).
        let open: Int
        var running = 0
    }

    private(set) var lanes: [Lane]
    /// Messages started and not finished, in all lanes.
    private(set) var running = 0

    /// `concurrency` requests and `open` messages shared among the `exchanges` (one lane each) or,
    /// with one exchange, among (at most `concurrency` of) `eventLoops`.
    init(exchanges: [FCMExchange], eventLoops: [any EventLoop], concurrency: Int, open: Int) {
        let count = max(1, min(max(exchanges.count, eventLoops.count), concurrency))
        lanes = (0..<count).map { index in
            func share(_ total: Int) -> Int { total / count + (index < total % count ? 1 : 0) }
            return Lane(
                executor: EventLoopExecutor(eventLoops[index % eventLoops.count]), exchange: exchanges[index % exchanges.count],
                gate: AsyncGate(limit: share(concurrency)), open: share(open))
        }
    }

    /// The lane with the most room, or nil when every lane is full.
    func roomiest() -> Int? {
        var best: Int?
        for index in lanes.indices where lanes[index].running < lanes[index].open {
            if best.map({ lanes[index].open - lanes[index].running > lanes[$0].open - lanes[$0].running }) ?? true { best = index }
        }
        return best
    }

    mutating func started(_ lane: Int) {
        lanes[lane].running += 1
        running += 1
    }

    mutating func finished(_ lane: Int) {
        lanes[lane].running -= 1
        running -= 1
    }
}
