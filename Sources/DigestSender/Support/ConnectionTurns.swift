import Synchronization

/// Turns on a client's HTTP/1.1 connections (``ConnectionTurnsStateMachine``): a request waits here,
/// with no deadline running, until a connection can carry it, instead of queueing in the client's pool
/// behind connections being opened. A task cancelled while waiting stops waiting at once
/// (`CancellationError`).
final class ConnectionTurns: Sendable {
    private struct State {
        var machine: ConnectionTurnsStateMachine
        var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        /// Given a turn, or cancelled, before their waiter was stored.
        var granted: Set<UInt64> = []
        var cancelled: Set<UInt64> = []
    }

    private let state: Mutex<State>
    private let ids = Atomic<UInt64>(0)

    init(limit: Int) { state = Mutex(State(machine: ConnectionTurnsStateMachine(limit: limit))) }

    var limit: Int { state.withLock { $0.machine.limit } }

    /// Waits for a turn; call ``give()`` once the request ends.
    func take() async throws {
        let id = ids.wrappingAdd(1, ordering: .relaxed).newValue
        if state.withLock({ $0.machine.take(id) }) == .go { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let early: Result<Void, any Error>? = state.withLock { state in
                    if state.granted.remove(id) != nil { return .success(()) }
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    state.waiters[id] = continuation
                    return nil
                }
                if let early { continuation.resume(with: early) }
            }
        } onCancel: {
            let waiter: CheckedContinuation<Void, any Error>? = state.withLock { state in
                guard state.machine.cancel(id) else { return nil }
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                state.cancelled.insert(id)
                return nil
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Ends a turn: the first waiter, if any, takes it.
    func give() {
        let next: CheckedContinuation<Void, any Error>? = state.withLock { state in
            guard let id = state.machine.give() else { return nil }
            // Given before its waiter was stored: it finds the turn when it stores it.
            guard let waiter = state.waiters.removeValue(forKey: id) else {
                state.granted.insert(id)
                return nil
            }
            return waiter
        }
        next?.resume()
    }
}
