import DigestNIO
import DigestThreads
import NIOCore

/// The sender's connections as lanes: each lane is one exchange (over https its own HTTP/2
/// connection, else one HTTP client: async-http-client keeps at most one HTTP/2 connection per event
/// loop in a client, so several clients make several connections) on one of the client's event
/// loops, with an equal share of the requests in flight (its gate) and of the messages started
/// (`open`); the next message goes to the lane with the most room.
///
/// A lane carries what its connection can: over HTTP/2 its share of the concurrency as streams; over
/// HTTP/1.1 (a plain `http` endpoint) one request at a time, so in flight are at most as many
/// requests as lanes, and the other messages wait in the dispatcher's buffer, not in a client's pool.
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
        let gate: AsyncSemaphore
        /// Messages this lane may have started and not finished (requests and answers not yet written).
        let open: Int
        var running = 0
    }

    private(set) var lanes: [Lane]
    /// Messages started and not finished, in all lanes.
    private(set) var running = 0

    /// `concurrency` requests shared among the `exchanges` (one lane each) or, with one exchange,
    /// among (at most `concurrency` of) `eventLoops`; each lane may start `openPerRequest` messages a
    /// request it carries at once (the others are answered and waiting for their outcome to be written).
    init(exchanges: [FCMExchange], eventLoops: [any EventLoop], concurrency: Int, openPerRequest: Int) {
        let count = Self.count(exchanges: exchanges.count, eventLoops: eventLoops.count, concurrency: concurrency)
        lanes = (0..<count).map { index in
            let exchange = exchanges[index % exchanges.count]
            let requests = exchange.isHTTP1 ? 1 : concurrency / count + (index < concurrency % count ? 1 : 0)
            return Lane(
                executor: EventLoopExecutor(eventLoops[index % eventLoops.count]), exchange: exchange,
                gate: AsyncSemaphore(permits: requests), open: requests * openPerRequest)
        }
    }

    /// How many lanes `exchanges` and `eventLoops` make for `concurrency`.
    static func count(exchanges: Int, eventLoops: Int, concurrency: Int) -> Int {
        max(1, min(max(exchanges, eventLoops), concurrency))
    }

    /// How many of `count` lanes use exchange `index` of `exchanges`: over HTTP/1.1, the connections
    /// it carries requests on at once.
    static func lanes(onExchange index: Int, of exchanges: Int, count: Int) -> Int {
        count / exchanges + (index < count % exchanges ? 1 : 0)
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
