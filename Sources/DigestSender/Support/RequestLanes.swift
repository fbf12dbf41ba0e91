import DigestNIO
import NIOCore

/// The sender's connections as lanes: each lane is one exchange (over https its own HTTP/2
/// connection, else one HTTP client: async-http-client keeps at most one HTTP/2 connection per event
/// loop in a client, so several clients make several connections) on one of the client's event
/// loops, with an equal share of the requests in flight. ``SenderStateMachine`` keeps each lane to
/// its share and sends the next message on the lane with the most room.
///
/// A lane carries what its connection can: over HTTP/2 its share of the concurrency as streams; over
/// HTTP/1.1 (a plain `http` endpoint) one request at a time, so in flight are at most as many
/// requests as lanes, and the other messages wait in the sender, not in a client's pool.
///
/// A message's task runs on its lane's loop and its request prefers that loop, so its writes and its
/// answer stay on one thread instead of hopping to a connection on another loop and back (with a
/// round-robin choice of loop, such hops took about an eighth of the loops' time). With one client
/// (HTTP/1.1 to a loopback server, say) there is a lane per event loop and the client's pool grows
/// about as many connections on each loop as the loop has requests.
enum RequestLanes {
    struct Lane: Sendable {
        let executor: EventLoopExecutor
        let exchange: HTTP2Exchange
        /// This lane's share of the requests in flight: at most the server's streams a connection.
        let requests: Int
    }

    /// `concurrency` requests shared among the `exchanges` (one lane each) or, with one exchange,
    /// among (at most `concurrency` of) `eventLoops`.
    static func make(exchanges: [HTTP2Exchange], eventLoops: [any EventLoop], concurrency: Int) -> [Lane] {
        let count = Self.count(exchanges: exchanges.count, eventLoops: eventLoops.count, concurrency: concurrency)
        return (0..<count).map { index in
            let exchange = exchanges[index % exchanges.count]
            let requests = exchange.isHTTP1 ? 1 : concurrency / count + (index < concurrency % count ? 1 : 0)
            return Lane(executor: EventLoopExecutor(eventLoops[index % eventLoops.count]), exchange: exchange, requests: max(1, requests))
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
}
