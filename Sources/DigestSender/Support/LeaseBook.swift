import DigestStore
import Synchronization

/// The messages one sender holds leases on, from the lease until their outcome is written: what the
/// lease keeper extends, and what a lease must not hand out a second time.
///
/// Its changes are made right after the store operation they mirror, with no other lease-changing
/// operation in between (``SendSession/inStoreOrder(_:)``), so the book follows the store's order
/// even when the tasks that asked see the answers in another order.
final class LeaseBook: Sendable {
    private struct State {
        var held: Set<Int64> = []
        /// Held ids an extension found no longer ours: their lease lapsed and the row moved on.
        var lost: Set<Int64> = []
    }

    private let state = Mutex(State())

    /// Records a lease; returns the messages not held already. A message already held was leased
    /// again after its lease lapsed (a sender starved of CPU longer than the lease): the copy this
    /// sender has stands, and sending the new one too would deliver it twice.
    func leased(_ messages: [LeasedMessage]) -> [LeasedMessage] {
        state.withLock { state in
            messages.filter { message in
                state.lost.remove(message.id)
                return state.held.insert(message.id).inserted
            }
        }
    }

    /// The ids to extend.
    var held: [Int64] { state.withLock { Array($0.held) } }

    /// After an extension of `asked`: those not in `kept` are lost.
    func extended(asked: [Int64], kept: Set<Int64>) -> Int {
        state.withLock { state in
            var lost = 0
            for id in asked where !kept.contains(id) && state.held.contains(id) {
                if state.lost.insert(id).inserted { lost += 1 }
            }
            return lost
        }
    }

    /// Before sending: true if the lease was lost, and the message is then forgotten (another sender
    /// may hold it now).
    func forgetIfLost(_ id: Int64) -> Bool {
        state.withLock { state in
            guard state.lost.remove(id) != nil else { return false }
            state.held.remove(id)
            return true
        }
    }

    /// Outcomes written (applied or not): no longer held.
    func settled(_ ids: some Sequence<Int64>) {
        state.withLock { state in
            for id in ids {
                state.held.remove(id)
                state.lost.remove(id)
            }
        }
    }

    var count: Int { state.withLock { $0.held.count } }
}
