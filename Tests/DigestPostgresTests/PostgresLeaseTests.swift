import DigestTesting
import Foundation
import PostgresNIO
import Synchronization
import Testing

@testable import DigestPostgres

/// ``PostgresLease`` alone: a wait that postgres-nio never answers ends at its deadline, sooner near a
/// connection loss, or when cancelled; a body left on a closed connection is abandoned; otherwise the
/// body's value and error come through.
@Suite(.timeLimit(.minutes(5))) struct PostgresLeaseTests {
    /// A client that is never run: postgres-nio queues its requests and answers none, as it does a
    /// request it lost (docs/005, W1).
    static func silentClient() throws -> PostgresClient {
        PostgresClient(configuration: try PostgresLocation(url: "postgres://digest@127.0.0.1:1/none?sslmode=disable").clientConfiguration(connections: 1))
    }

    /// A lease that looks often and gives up soon. (The tests check how a wait ended, not when: in a
    /// full run on 2 busy cores, tasks were seen to wait 48 s for a thread.)
    static let quick = PostgresLease(staleWait: .milliseconds(300), closedGrace: .milliseconds(300), tick: .milliseconds(20))

    @Test func aWaitNoConnectionAnswersEndsAtItsDeadline() async throws {
        let client = try Self.silentClient()
        await #expect(throws: PostgresLease.NoConnection(stale: false)) {
            try await Self.quick.borrow(client, until: .now + .milliseconds(300), lastLoss: { nil }) { _ in 1 }
        }
    }

    @Test func aWaitNearAConnectionLossEndsAfterTheStaleWait() async throws {
        let client = try Self.silentClient()
        let loss = ContinuousClock.now
        await #expect(throws: PostgresLease.NoConnection(stale: true)) {
            try await Self.quick.borrow(client, until: .now + .seconds(3600), lastLoss: { loss }) { _ in 1 }
        }
    }

    @Test func aLossLongBeforeTheWaitDoesNotShortenIt() async throws {
        let client = try Self.silentClient()
        let loss = ContinuousClock.now - .seconds(10)
        let started = ContinuousClock.now
        await #expect(throws: PostgresLease.NoConnection(stale: false)) {
            try await Self.quick.borrow(client, until: .now + .milliseconds(800), lastLoss: { loss }) { _ in 1 }
        }
        #expect(started.duration(to: .now) >= .milliseconds(800))
    }

    @Test func aCancelledWaitEndsAtOnce() async throws {
        let client = try Self.silentClient()
        // Cancelled, not given up at its deadline (which would throw NoConnection).
        let wait = Task { try await PostgresLease().borrow(client, until: .now + .seconds(3600), lastLoss: { nil }) { _ in 1 } }
        try await Task.sleep(for: .milliseconds(100))
        wait.cancel()
        await #expect(throws: CancellationError.self) { try await wait.value }
    }

    /// On a running client of the shared cluster: a value and an error of the body come through, and
    /// a body that closes its connection and then waits on something that never ends (as a query
    /// written as its connection closed did, W2) is abandoned.
    @Test func aBodyEndsWithItsOwnResultOrIsAbandonedOnAClosedConnection() async throws {
        let url = try PostgresCluster.shared().makeDatabase("lease")
        let client = PostgresClient(configuration: try PostgresLocation(url: url).clientConfiguration(connections: 1))
        let stuck = Stuck()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let value = try await Self.quick.borrow(client, until: .now + .seconds(600), lastLoss: { nil }) {
                try await $0.rows("SELECT 7").first?.decode(Int.self)
            }
            #expect(value == 7)
            await #expect(throws: PSQLError.self) {
                try await Self.quick.borrow(client, until: .now + .seconds(600), lastLoss: { nil }) { try await $0.run("SELECT nonsense") }
            }
            await #expect(throws: PostgresLease.ConnectionLost.self) {
                try await Self.quick.borrow(client, until: .now + .seconds(600), lastLoss: { nil }) { connection in
                    try await connection.close()
                    await stuck.wait()
                }
            }
            stuck.release()
        }
    }

    @Test func aOneShotKeepsTheFirstResultEvenOneBeforeTheWait() async throws {
        let early = OneShot<Int>()
        early.resume(.success(1))
        early.resume(.success(2))
        #expect(try await withCheckedThrowingContinuation { early.wait($0) } == 1)
        let late = OneShot<Int>()
        Task {
            late.resume(.success(3))
            late.resume(.failure(CancellationError()))
        }
        #expect(try await withCheckedThrowingContinuation { late.wait($0) } == 3)
    }
}

extension PostgresLease.NoConnection: Equatable {
    static func == (a: Self, b: Self) -> Bool { a.stale == b.stale }
}

/// A wait that ignores cancellation and ends only when released.
private final class Stuck: Sendable {
    private let state = Mutex<(released: Bool, waiting: CheckedContinuation<Void, Never>?)>((false, nil))

    func wait() async {
        await withCheckedContinuation { continuation in
            let released = state.withLock { state -> Bool in
                if !state.released { state.waiting = continuation }
                return state.released
            }
            if released { continuation.resume() }
        }
    }

    func release() {
        state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.released = true
            defer { state.waiting = nil }
            return state.waiting
        }?.resume()
    }
}
