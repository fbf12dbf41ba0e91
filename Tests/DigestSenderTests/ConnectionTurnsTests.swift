@testable import DigestSender
import Testing

/// Turns on a client's HTTP/1.1 connections: the state machine without I/O, then the waiting.
@Suite struct ConnectionTurnsTests {
    @Test func atMostTheLimitAtOnceTheOthersInArrivalOrder() {
        var turns = ConnectionTurnsStateMachine(limit: 2)
        let taken = [1, 2, 3, 4, 5].map { turns.take($0) }
        #expect(taken == [.go, .go, .wait, .wait, .wait])
        #expect(turns.busy == 2 && turns.waitingCount == 3)
        let first = turns.give()
        #expect(first == 3)
        let cancelled = [turns.cancel(4), turns.cancel(4), turns.cancel(3)]
        #expect(cancelled == [true, false, false])  // gone, or already given its turn
        let second = turns.give()
        #expect(second == 5 && turns.busy == 2)
        let ends = [turns.give(), turns.give()]
        #expect(ends == [nil, nil] && turns.busy == 0)
        // Nobody waits while a turn is free, and a newcomer does not pass those waiting.
        let again = [6, 7, 8].map { turns.take($0) }
        #expect(again == [.go, .go, .wait])
        let third = turns.give()
        let newcomer = turns.take(9)
        #expect(third == 8 && newcomer == .wait)
    }

    @Test func aCancelledWaiterStopsWaitingAndTakesNoTurn() async throws {
        let turns = ConnectionTurns(limit: 1)
        try await turns.take()
        let waiter = Task { try await turns.take() }
        let second = Task { try await turns.take() }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        turns.give()
        try await second.value  // the turn went to the next waiter, not to the cancelled one
        turns.give()
        try await turns.take()  // and is free again
    }
}
