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
/// per browser vendor, a few more for Windows' regional hosts).
final class WebPushOrigins: Sendable {
    private let origins = Mutex<[String: WebPushOrigin]>([:])
    private let make: @Sendable (_ origin: String, _ host: String) -> WebPushOrigin

    init(make: @escaping @Sendable (_ origin: String, _ host: String) -> WebPushOrigin) {
        self.make = make
    }

    /// The origin's state and connections (to `host`, the origin's), made the first time it is asked for.
    func origin(_ origin: String, host: String) -> WebPushOrigin {
        origins.withLock { origins in
            if let known = origins[origin] { return known }
            let made = make(origin, host)
            origins[origin] = made
            return made
        }
    }

    /// Every origin so far.
    var all: [WebPushOrigin] { origins.withLock { Array($0.values) } }
}
