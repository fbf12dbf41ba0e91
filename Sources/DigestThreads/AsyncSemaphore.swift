import Synchronization

/// At most `permits` holders at once; the others wait in the order they came, and a waiter whose
/// task is cancelled leaves the line with `CancellationError`.
///
/// The one waiting line of the project: a pool's resources (``ResourcePool``), the sender's requests
/// in flight, the image downloads, a unit of work that must run alone all wait here.
///
/// ```swift
/// let downloads = AsyncSemaphore(permits: 4)
/// try await downloads.wait()
/// defer { downloads.signal() }
/// ```
package final class AsyncSemaphore: Sendable {
    private struct State {
        var permits: Int
        /// Waiters by ticket; a cancelled one is removed here and skipped in `order`.
        var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var order: [UInt64] = []
        var head = 0
        var nextTicket: UInt64 = 0

        /// The first waiter still waiting, taken out of the line.
        mutating func popFirst() -> CheckedContinuation<Void, any Error>? {
            while head < order.count {
                let ticket = order[head]
                head += 1
                if head == order.count {
                    order.removeAll(keepingCapacity: true)
                    head = 0
                }
                if let waiter = waiters.removeValue(forKey: ticket) { return waiter }
            }
            return nil
        }
    }

    private let state: Mutex<State>

    package init(permits: Int) {
        precondition(permits >= 0, "a semaphore needs zero or more permits")
        state = Mutex(State(permits: permits))
    }

    /// Takes a permit, waiting behind those who asked first. Throws `CancellationError` (holding no
    /// permit) when the task is cancelled before one is its own.
    package func wait() async throws {
        // A free permit is taken without suspending. There is none while anyone waits: `signal` hands
        // its permit to the first waiter, so the order of arrival holds.
        if takeFree() { return }
        let ticket = state.withLock { state -> UInt64 in
            state.nextTicket &+= 1
            return state.nextTicket
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Next { case proceed, wait, cancelled }
                let next = state.withLock { state -> Next in
                    // Cancellation sets the task's flag before its handler runs: a handler that ran
                    // before this found no waiter, and this sees the flag.
                    if Task.isCancelled { return .cancelled }
                    if state.permits > 0 {
                        state.permits -= 1
                        return .proceed
                    }
                    state.waiters[ticket] = continuation
                    state.order.append(ticket)
                    return .wait
                }
                switch next {
                case .proceed: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .wait: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: ticket) }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Takes a free permit, if there is one.
    private func takeFree() -> Bool {
        state.withLock { state in
            guard state.permits > 0 else { return false }
            state.permits -= 1
            return true
        }
    }

    /// Gives a permit back: to the first waiter, else to the free ones.
    package func signal() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            if let first = state.popFirst() { return first }
            state.permits += 1
            return nil
        }
        next?.resume()
    }

    /// Tasks waiting now (for tests and gauges).
    package var waiting: Int { state.withLock { $0.waiters.count } }
}
