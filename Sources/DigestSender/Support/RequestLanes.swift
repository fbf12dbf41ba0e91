import DigestNIO
import NIOCore

/// The HTTP client's event loops as lanes: each lane has an equal share of the requests in flight
/// (its gate) and of the messages started (`open`), and the next message goes to the lane with the
/// most room.
///
/// A message's task runs on its lane's loop and its request prefers that loop. As no lane has more
/// requests in flight than its share, the connection pool grows about as many connections on each
/// loop as the loop has requests, and a request finds an idle connection on its own loop: its
/// writes and its answer stay on one thread instead of hopping to a connection on another loop and
/// back (with a round-robin choice of loop, such hops took about an eighth of the loops' time).
struct RequestLanes {
    struct Lane {
        let executor: EventLoopExecutor
        /// This lane's share of the requests in flight.
        let gate: AsyncGate
        /// Messages this lane may have started and not finished (requests and answers not yet written).
        let open: Int
        var running = 0
    }

    private(set) var lanes: [Lane]
    /// Messages started and not finished, in all lanes.
    private(set) var running = 0

    /// `concurrency` requests and `open` messages shared among (at most `concurrency` of) `eventLoops`.
    init(eventLoops: [any EventLoop], concurrency: Int, open: Int) {
        let count = max(1, min(eventLoops.count, concurrency))
        lanes = (0..<count).map { index in
            func share(_ total: Int) -> Int { total / count + (index < total % count ? 1 : 0) }
            return Lane(executor: EventLoopExecutor(eventLoops[index]), gate: AsyncGate(limit: share(concurrency)), open: share(open))
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
