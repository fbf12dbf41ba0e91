/// The sender's lanes (its connections) as ``SenderStateMachine`` counts them: a lane carries at
/// most its capacity of requests, and holds at most `open` messages sending, or answered and not yet
/// written (the duplicate bound). The counts are private: the machine moves a message through a lane
/// by these operations only, each checked.
struct SendingLanes: Sendable {
    private struct Lane: Sendable {
        let capacity: Int
        let open: Int
        /// Requests sending.
        var sending = 0
        /// Answered, outcome not yet written.
        var unsettled = 0

        /// Requests it may start.
        var free: Int { capacity - sending }
        /// Messages it may still hold.
        var room: Int { open - sending - unsettled }
    }

    private var lanes: [Lane]

    /// A lane for each of `capacities` (requests at once, each at least 1), holding at most
    /// `openPerRequest` messages per request it carries.
    init(capacities: [Int], openPerRequest: Int) {
        precondition(!capacities.isEmpty && capacities.allSatisfy { $0 >= 1 }, "every lane carries a request at least")
        lanes = capacities.map { Lane(capacity: $0, open: $0 * max(1, openPerRequest)) }
    }

    /// Messages sending, or answered and waiting for the store.
    var inFlight: Int { lanes.reduce(0) { $0 + $1.sending + $1.unsettled } }

    /// The lane with the most free requests (then the most room), or nil when none has room.
    var roomiest: Int? {
        var best: Int?
        var bestFree = 0, bestRoom = 0
        for index in lanes.indices where lanes[index].free > 0 && lanes[index].room > 0 {
            let free = lanes[index].free, room = lanes[index].room
            if best == nil || free > bestFree || (free == bestFree && room > bestRoom) {
                best = index
                bestFree = free
                bestRoom = room
            }
        }
        return best
    }

    /// A request starts on `lane` (which ``roomiest`` gave).
    mutating func started(on lane: Int) {
        precondition(lanes[lane].free > 0 && lanes[lane].room > 0, "a send on a lane without room")
        lanes[lane].sending += 1
    }

    /// The request on `lane` ended.
    mutating func ended(on lane: Int) {
        precondition(lanes[lane].sending > 0, "an answer on a lane with nothing sending")
        lanes[lane].sending -= 1
    }

    /// An answer on `lane` waits for the store, holding its room until ``written(on:)``.
    mutating func awaitsStore(on lane: Int) {
        lanes[lane].unsettled += 1
    }

    /// An outcome that held room on `lane` is written.
    mutating func written(on lane: Int) {
        precondition(lanes[lane].unsettled > 0, "a write for a lane with nothing unsettled")
        lanes[lane].unsettled -= 1
    }
}
