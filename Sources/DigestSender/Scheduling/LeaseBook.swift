import DigestStore

/// The leases a sender holds, as ``SenderStateMachine`` keeps them: from the lease until the outcome
/// is written. A lease an extension found taken is lost: the message is forgotten unsent (another
/// sender holds it now), or its outcome is written and the store ignores it. Empty in a dry run,
/// which holds no lease.
struct LeaseBook: Sendable {
    private var held: Set<Int64> = []
    /// Held ids an extension found no longer ours: their lease lapsed and the row moved on.
    private var lost: Set<Int64> = []
    /// Messages this run postponed that had been tried before (a retry, then a host not allowed): the
    /// outbox counts them among its retries (tried, not due yet), which a draining sender waits
    /// for; a postponed message it does not wait for. Leased again, a message leaves the set.
    private var postponedAfterTries: Set<Int64> = []

    /// Leases held.
    var count: Int { held.count }

    /// The ids to extend.
    var ids: [Int64] { Array(held) }

    /// Postponed messages the outbox counts as retries waiting.
    var postponedRetries: Int { postponedAfterTries.count }

    /// Takes the leases on `messages`; returns those not already held. A message already held was
    /// leased again after its lease lapsed (a sender starved of CPU longer than the lease): the copy
    /// held stands, and sending the new one too would deliver it twice.
    mutating func take(_ messages: [LeasedMessage]) -> [LeasedMessage] {
        messages.filter { message in
            lost.remove(message.id)
            postponedAfterTries.remove(message.id)
            return held.insert(message.id).inserted
        }
    }

    /// The extension of `asked` kept `kept`: the others still held are lost. Returns how many were
    /// newly lost.
    mutating func extended(_ asked: [Int64], kept: Set<Int64>) -> Int {
        var newlyLost = 0
        for id in asked where !kept.contains(id) && held.contains(id) {
            if lost.insert(id).inserted { newlyLost += 1 }
        }
        return newlyLost
    }

    /// Before a send: a lost lease is given up (the message is not sent). Returns whether it was lost.
    mutating func giveUpIfLost(_ id: Int64) -> Bool {
        guard lost.remove(id) != nil else { return false }
        held.remove(id)
        return true
    }

    /// A message postponed after earlier tries.
    mutating func postponedAfterTry(_ id: Int64) {
        postponedAfterTries.insert(id)
    }

    /// The outcome of `id` is written: its lease is done.
    mutating func written(_ id: Int64) {
        held.remove(id)
        lost.remove(id)
    }
}
