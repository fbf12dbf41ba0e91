import DigestStore
import Synchronization

/// Outcomes waiting to be written: requests add them one by one, the writer takes all there are, so
/// one transaction settles whatever arrived while the previous one ran.
final class SettlementQueue: Sendable {
    private struct State {
        var items: [Settlement] = []
        var waiter: CheckedContinuation<[Settlement], Never>?
        var closed = false
    }

    private let state = Mutex(State())

    func add(_ settlement: Settlement) {
        // A waiting writer means the queue was empty: hand the outcome straight over.
        let waiter: CheckedContinuation<[Settlement], Never>? = state.withLock { state in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.items.append(settlement)
            return nil
        }
        waiter?.resume(returning: [settlement])
    }

    /// Everything queued, waiting for at least one; empty once closed and drained.
    func takeAll() async -> [Settlement] {
        await withCheckedContinuation { continuation in
            let ready: [Settlement]? = state.withLock { state in
                if !state.items.isEmpty || state.closed {
                    defer { state.items.removeAll(keepingCapacity: true) }
                    return state.items
                }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// No more outcomes: the writer finishes what is queued and stops.
    func close() {
        let waiter: CheckedContinuation<[Settlement], Never>? = state.withLock { state in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: [])
    }
}
