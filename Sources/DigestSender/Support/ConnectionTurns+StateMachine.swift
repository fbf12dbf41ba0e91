/// Who may use a client's HTTP/1.1 connections next: at most `limit` requests at once (a connection
/// carries one request at a time), the others waiting in arrival order. Pure: the waiting tasks are
/// ``ConnectionTurns``'s; this only decides.
///
/// Invariants: `busy ≤ limit`; a waiter is never left waiting while a turn is free; every waiter is
/// either given a turn or cancelled, once.
struct ConnectionTurnsStateMachine {
    enum TakeAction: Equatable {
        /// The turn is taken: go.
        case go
        /// Queued: wait until ``give()`` or ``cancel(_:)`` names this id.
        case wait
    }

    let limit: Int
    private(set) var busy = 0
    private var waiting: [UInt64] = []
    private var head = 0

    init(limit: Int) { self.limit = max(1, limit) }

    /// Requests waiting for a turn.
    var waitingCount: Int { waiting.count - head }

    /// Asks for a turn for request `id`.
    mutating func take(_ id: UInt64) -> TakeAction {
        if busy < limit && waitingCount == 0 {
            busy += 1
            return .go
        }
        waiting.append(id)
        return .wait
    }

    /// A turn ended; returns the waiting request that takes it, if any.
    mutating func give() -> UInt64? {
        guard head < waiting.count else {
            busy = max(0, busy - 1)
            return nil
        }
        let next = waiting[head]
        head += 1
        if head == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            head = 0
        }
        return next
    }

    /// Request `id` stops waiting; true if it was waiting (it then had no turn to give back).
    mutating func cancel(_ id: UInt64) -> Bool {
        guard let index = waiting[head...].firstIndex(of: id) else { return false }
        waiting.remove(at: index)
        return true
    }
}
