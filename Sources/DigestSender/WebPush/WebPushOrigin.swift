import AsyncHTTPClient
import NIOCore
import Synchronization

/// One push service, by origin (`https://host[:port]`): its connections, and what its answers told
/// about the sender's VAPID key.
///
/// A 401 or 403 to a freshly signed token means either that this subscription was made with another
/// key (the site changed its `applicationServerKey`: the subscription is useless to this sender) or
/// that the push service refuses the key itself (a wrong `--vapid-key-file`: every subscription
/// there would be refused, and none of them is dead). The answers decide: once the origin accepted a
/// request, a refusal is the subscription's (`VAPID_MISMATCH`, dead); once two different
/// subscriptions were refused and none accepted, it is the key's, and nothing more is sent there;
/// in between, the refused message waits (postponed) for the origin's next answers.
final class WebPushOrigin: Sendable {
    /// What a refusal comes to.
    enum Refusal: Equatable {
        /// Others were accepted here: this subscription was made with another key.
        case mismatch
        /// Two subscriptions were refused and none accepted: the origin refuses the key. `first`:
        /// this refusal decided it (log it once).
        case keyRefused(first: Bool)
        /// Nothing decides yet.
        case undecided
    }

    let origin: String
    /// Requests go over these connections in turn (``nextExchange()``).
    let exchanges: [HTTP2Exchange]
    private let turn = Atomic<UInt>(0)
    private let state = Mutex<(accepted: Bool, refused: Set<String>, keyRefused: Bool)>((false, [], false))

    init(origin: String, exchanges: [HTTP2Exchange]) {
        self.origin = origin
        self.exchanges = exchanges
    }

    /// The connection the next request goes over: each in turn, whatever the sender's lanes (one per
    /// event loop) are.
    func nextExchange() -> HTTP2Exchange {
        exchanges[Int(turn.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(exchanges.count))]
    }

    /// Whether the origin refuses the key: nothing more is sent there.
    var refusesKey: Bool { state.withLock { $0.keyRefused } }

    /// A request was accepted.
    func accepted() {
        state.withLock { state in
            if !state.accepted { state.accepted = true }
        }
    }

    /// A freshly signed token was refused for the subscription `target`.
    func refused(_ target: String) -> Refusal {
        state.withLock { state in
            if state.keyRefused { return .keyRefused(first: false) }
            if state.accepted { return .mismatch }
            state.refused.insert(target)
            guard state.refused.count >= 2 else { return .undecided }
            state.keyRefused = true
            state.refused = []
            return .keyRefused(first: true)
        }
    }

    func close() {
        for exchange in exchanges { exchange.closeConnection() }
    }
}

/// The push services the sender has talked to, made on first use (a handful in practice: one origin
/// per browser vendor, a few more for Windows' regional hosts), at most ``limit`` at a time.
/// Endpoints come from subscribers: rows naming ever new origins of allowed hosts (another port,
/// another of Windows' or Apple's host names) would otherwise grow the table and its connections
/// without end. Past the limit the origin asked for least recently is closed and forgotten (its
/// requests in flight fail and are tried again; what its answers told about the key is learnt anew).
final class WebPushOrigins: Sendable {
    /// The most origins kept.
    static let defaultLimit = 256

    private let limit: Int
    private let origins = Mutex<(known: [String: (origin: WebPushOrigin, used: UInt64)], tick: UInt64)>(([:], 0))
    private let make: @Sendable (_ origin: String, _ host: String) -> WebPushOrigin

    init(limit: Int = defaultLimit, make: @escaping @Sendable (_ origin: String, _ host: String) -> WebPushOrigin) {
        self.limit = max(1, limit)
        self.make = make
    }

    /// The origin's state and connections (to `host`, the origin's), made the first time it is asked
    /// for (and again after it was forgotten).
    func origin(_ origin: String, host: String) -> WebPushOrigin {
        let (found, evicted) = origins.withLock { table -> (WebPushOrigin, WebPushOrigin?) in
            table.tick += 1
            if let known = table.known[origin] {
                table.known[origin]!.used = table.tick
                return (known.origin, nil)
            }
            var evicted: WebPushOrigin?
            if table.known.count >= limit, let oldest = table.known.min(by: { $0.value.used < $1.value.used }) {
                evicted = table.known.removeValue(forKey: oldest.key)?.origin
            }
            let made = make(origin, host)
            table.known[origin] = (made, table.tick)
            return (made, evicted)
        }
        evicted?.close()
        return found
    }

    /// Every origin kept.
    var all: [WebPushOrigin] { origins.withLock { $0.known.values.map(\.origin) } }
}
