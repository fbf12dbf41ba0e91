import DigestStore
import Synchronization

/// Outcomes waiting to be written: requests add them one by one, the writer takes all there are, so
/// one transaction settles whatever arrived while the previous one ran.
final class SettlementQueue: Sendable {
    private struct State {
        var items: [Settlement] = []
        var waiter: CheckedContinuation<[Settlement], Never>?
        var closed = false
        /// Outcomes added, taken by the writer, and written, since the start (in that order).
        var added = 0
        var taken = 0
        var written = 0
        /// The writer stopped (closed and drained, or failed): nothing more will be written.
        var writerGone = false
        /// Who waits for the outcomes added before they asked (their `added` count) to be written.
        var flushWaiters: [(upTo: Int, continuation: CheckedContinuation<Void, Never>)] = []

        mutating func takeFlushWaiters(all: Bool) -> [CheckedContinuation<Void, Never>] {
            let done = flushWaiters.filter { all || $0.upTo <= written }.map(\.continuation)
            flushWaiters.removeAll { all || $0.upTo <= written }
            return done
        }
    }

    private let state = Mutex(State())

    func add(_ settlement: Settlement) {
        // A waiting writer means the queue was empty: hand the outcome straight over.
        let waiter: CheckedContinuation<[Settlement], Never>? = state.withLock { state in
            state.added += 1
            if let waiter = state.waiter {
                state.waiter = nil
                state.taken += 1
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
                    state.taken += state.items.count
                    return state.items
                }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Everything queued now, without waiting (possibly nothing).
    func takeQueued() -> [Settlement] {
        state.withLock { state in
            defer { state.items.removeAll(keepingCapacity: true) }
            state.taken += state.items.count
            return state.items
        }
    }

    /// The writer wrote everything it took.
    func written() {
        let waiters = state.withLock { state in
            state.written = state.taken
            return state.takeFlushWaiters(all: false)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The writer stopped; nothing more will be written (flush waiters stop waiting).
    func writerStopped() {
        let waiters = state.withLock { state in
            state.writerGone = true
            return state.takeFlushWaiters(all: true)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Outcomes added but not written yet: answers FCM gave that a crash now would lose (and resend).
    var unwritten: Int { state.withLock { $0.writerGone ? 0 : $0.added - $0.written } }

    /// Returns once every outcome added before the call is written (or the writer stopped).
    func flushed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                if state.writerGone || state.written >= state.added { return true }
                state.flushWaiters.append((state.added, continuation))
                return false
            }
            if done { continuation.resume() }
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
