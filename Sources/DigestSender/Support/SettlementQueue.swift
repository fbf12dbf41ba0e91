import DigestStore
import Synchronization

/// Outcomes waiting to be written: requests add them one by one, the writer takes all there are, so
/// one transaction settles whatever arrived while the previous one ran. A request that submits its
/// outcome waits until it is written: until then it counts as in flight.
final class SettlementQueue: Sendable {
    typealias Waiter = CheckedContinuation<Void, any Error>

    struct Item: Sendable {
        var settlement: Settlement
        var waiter: Waiter?
    }

    private struct State {
        var items: [Item] = []
        var writer: CheckedContinuation<[Item], Never>?
        var closed = false
        var failure: (any Error)?
    }

    private let state = Mutex(State())

    /// Queues an outcome without waiting for it to be written.
    func add(_ settlement: Settlement) { put(Item(settlement: settlement, waiter: nil)) }

    /// Queues an outcome and returns once it is written (throws what the write threw).
    func submit(_ settlement: Settlement) async throws {
        try await withCheckedThrowingContinuation { (waiter: Waiter) in
            put(Item(settlement: settlement, waiter: waiter))
        }
    }

    private func put(_ item: Item) {
        // A waiting writer means the queue was empty: hand the outcome straight over.
        let (writer, failure): (CheckedContinuation<[Item], Never>?, (any Error)?) = state.withLock { state in
            if let failure = state.failure { return (nil, failure) }
            if let writer = state.writer {
                state.writer = nil
                return (writer, nil)
            }
            state.items.append(item)
            return (nil, nil)
        }
        if let failure { item.waiter?.resume(throwing: failure) }
        writer?.resume(returning: [item])
    }

    /// Everything queued, waiting for at least one; empty once closed and drained.
    func takeAll() async -> [Item] {
        await withCheckedContinuation { continuation in
            let ready: [Item]? = state.withLock { state in
                if !state.items.isEmpty || state.closed {
                    defer { state.items.removeAll(keepingCapacity: true) }
                    return state.items
                }
                state.writer = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// No more outcomes: the writer finishes what is queued and stops.
    func close() {
        let writer: CheckedContinuation<[Item], Never>? = state.withLock { state in
            state.closed = true
            defer { state.writer = nil }
            return state.writer
        }
        writer?.resume(returning: [])
    }

    /// The writer failed writing `items`: they, everything queued and everything submitted later
    /// fail with `error`, so no request waits for a writer that is gone.
    func fail(_ items: [Item], with error: any Error) {
        let queued: [Item] = state.withLock { state in
            state.failure = error
            defer { state.items.removeAll() }
            return state.items
        }
        for item in items + queued { item.waiter?.resume(throwing: error) }
    }
}
