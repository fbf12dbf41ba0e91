import Synchronization

/// At most `limit` holders at once; the others wait in arrival order.
final class AsyncGate: Sendable {
    private struct State {
        var free: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }

    private let state: Mutex<State>

    init(limit: Int) { state = Mutex(State(free: limit)) }

    func enter() async {
        // A free place is taken without suspending. There is none while anyone waits: `leave` hands
        // its place to the first waiter, so the order of arrival holds.
        let entered = state.withLock { state in
            guard state.free > 0 else { return false }
            state.free -= 1
            return true
        }
        if entered { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let entered = state.withLock { state in
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if entered { continuation.resume() }
        }
    }

    func leave() {
        let next: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard state.head < state.waiters.count else {
                state.free += 1
                return nil
            }
            let next = state.waiters[state.head]
            state.head += 1
            if state.head == state.waiters.count {
                state.waiters.removeAll(keepingCapacity: true)
                state.head = 0
            }
            return next
        }
        next?.resume()
    }
}
