import PostgresNIO
import Synchronization

/// One connection of a `PostgresClient` (postgres-nio's pool), borrowed for one unit of work in a way
/// that never waits on postgres-nio 1.33 for good: the workarounds that docs/005 lists, each with the
/// reproduction of what it works around ("What digest works around in postgres-nio 1.33").
///
/// - The wait for a connection ends at a deadline, and `staleWait` after a connection loss of the
///   unit's lane near the wait, with ``NoConnection`` (the caller asks again, which makes the pool
///   try a new connection): a request may stay queued with no connection coming (docs/005, W1).
/// - A body still on its connection `closedGrace` after that connection closed is abandoned with
///   ``ConnectionLost`` (the unit runs again): a query written as its connection closes may never
///   answer (W2).
/// - The unit runs in a task of its own that a wait given up, or a body abandoned, leaves behind,
///   cancelled, instead of awaiting it: a request whose task is cancelled just as it is made is not
///   taken out of the pool's queue, and answers neither (W3). A task group, which awaits its
///   children, would wait as long. Such a request, if ever served, hands its connection back at once.
///
/// ```swift
/// let rows = try await PostgresLease().borrow(client, until: .now + .seconds(60), lastLoss: { nil }) {
///     try await $0.rows("SELECT 1")
/// }
/// ```
struct PostgresLease: Sendable {
    /// How long a wait for a connection may go on after a unit of its lane lost one (the server
    /// restarted, say), or after it began when that loss was more recent than this: long enough for
    /// the units queued before it to run again.
    var staleWait = Duration.seconds(15)
    /// How long a body may wait on its connection after that connection closed.
    var closedGrace = Duration.seconds(2)
    /// How often the wait and the connection are looked at.
    var tick = Duration.milliseconds(250)

    /// The client gave no connection: it could not make one (in time), or it was shut down;
    /// `stale` when the wait outlived a connection loss of its lane by ``staleWait``.
    struct NoConnection: Error {
        var stale = false
    }

    /// A unit's connection closed under it and its body never heard.
    struct ConnectionLost: Error {}

    /// Runs `body` on a connection of `client`, held for its whole duration. The wait for the
    /// connection ends at `deadline`, or ``staleWait`` after the later of a recent connection loss of
    /// the lane (`lastLoss`) and the wait's start, with ``NoConnection``; a body still on its
    /// connection ``closedGrace`` after the connection closed ends with ``ConnectionLost``.
    /// Cancelling the calling task ends a wait with `CancellationError` and cancels a body.
    func borrow<T: Sendable>(
        _ client: PostgresClient, until deadline: ContinuousClock.Instant,
        lastLoss: @escaping @Sendable () -> ContinuousClock.Instant?,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let race = Race()
        let outcome = OneShot<T>()
        let started = ContinuousClock.now
        let work = Task {
            do {
                let value = try await client.withConnection { connection in
                    guard race.lease(connection) else { throw NoConnection() }
                    return try await body(connection)
                }
                outcome.resume(.success(value))
            } catch {
                let state = race.state.load(ordering: .acquiring)
                outcome.resume(.failure(state == Race.leased ? error : NoConnection(stale: state == Race.gaveUpAfterLoss)))
            }
        }
        let watchdog = Task { await watch(race, outcome, work, started: started, deadline: deadline, lastLoss: lastLoss) }
        defer { watchdog.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { outcome.wait($0) }
        } onCancel: {
            // Still waiting: give up now. Leased: the body hears the cancellation and ends.
            if race.giveUp(Race.gaveUp) { outcome.resume(.failure(CancellationError())) }
            work.cancel()
        }
    }

    /// Every ``tick`` until the unit ends: gives up a wait (begun at `started`) past its end, abandons
    /// a body whose connection closed ``closedGrace`` ago.
    private func watch<T>(
        _ race: Race, _ outcome: OneShot<T>, _ work: Task<Void, Never>, started: ContinuousClock.Instant,
        deadline: ContinuousClock.Instant, lastLoss: @Sendable () -> ContinuousClock.Instant?
    ) async {
        var closedSince: ContinuousClock.Instant?
        while true {
            switch race.state.load(ordering: .acquiring) {
            case Race.waiting:
                var end = deadline
                var stale = false
                if let loss = lastLoss(), loss + staleWait > started, max(loss, started) + staleWait < end {
                    end = max(loss, started) + staleWait
                    stale = true
                }
                if ContinuousClock.now >= end, race.giveUp(stale ? Race.gaveUpAfterLoss : Race.gaveUp) {
                    work.cancel()
                    outcome.resume(.failure(NoConnection(stale: stale)))
                    return
                }
            case Race.leased:
                if race.connection?.isClosed == true {
                    let since = closedSince ?? .now
                    closedSince = since
                    if since.duration(to: .now) > closedGrace {
                        work.cancel()
                        outcome.resume(.failure(ConnectionLost()))
                        return
                    }
                }
            default:
                return
            }
            do {
                try await Task.sleep(for: tick)
            } catch {
                return  // the unit ended
            }
        }
    }

    /// Who won a unit's connection: the connection (leased) or the wait's end (given up).
    private final class Race: Sendable {
        static let waiting = 0, leased = 1, gaveUp = 2, gaveUpAfterLoss = 3
        let state = Atomic<Int>(waiting)
        private let leasedConnection = Mutex<PostgresConnection?>(nil)

        /// Takes `connection` for the unit unless its wait was given up.
        func lease(_ connection: PostgresConnection) -> Bool {
            leasedConnection.withLock { $0 = connection }
            return state.compareExchange(expected: Self.waiting, desired: Self.leased, ordering: .acquiringAndReleasing).exchanged
        }

        /// Ends the wait as `how` unless a connection came first.
        func giveUp(_ how: Int) -> Bool {
            state.compareExchange(expected: Self.waiting, desired: how, ordering: .acquiringAndReleasing).exchanged
        }

        var connection: PostgresConnection? { leasedConnection.withLock { $0 } }
    }
}

/// A continuation resumed once, by the first result, even one that comes before ``wait(_:)``.
final class OneShot<T: Sendable>: Sendable {
    private enum State { case idle, waiting(CheckedContinuation<T, any Error>), result(Result<T, any Error>), done }
    private let state = Mutex(State.idle)

    func wait(_ continuation: CheckedContinuation<T, any Error>) {
        let ready = state.withLock { state -> Result<T, any Error>? in
            switch state {
            case .idle:
                state = .waiting(continuation)
                return nil
            case .result(let result):
                state = .done
                return result
            case .waiting, .done:
                preconditionFailure("waited for twice")
            }
        }
        if let ready { continuation.resume(with: ready) }
    }

    func resume(_ result: Result<T, any Error>) {
        let waiting = state.withLock { state -> CheckedContinuation<T, any Error>? in
            switch state {
            case .idle:
                state = .result(result)
                return nil
            case .waiting(let continuation):
                state = .done
                return continuation
            case .result, .done:
                return nil  // the first result counts
            }
        }
        waiting?.resume(with: result)
    }
}
