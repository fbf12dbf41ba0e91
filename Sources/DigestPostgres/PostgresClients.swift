import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// The connections of one ``PostgresDatabase``, for its whole life: a `PostgresClient` (postgres-nio's
/// pool) of at most `size` connections, one kept open while it runs (docs/005, W1), that every part
/// of the database borrows from, one connection per unit of work, and a second client of one
/// connection for the chunk-lease renewer alone, so a renewal never waits behind a slow query.
///
/// Opened at first use. The first connection is made directly, not by the pool, so that a wrong host,
/// password or TLS setting fails at once with the server's own reason (the pool would retry it in the
/// background and only say that it could not connect); it reads the schema version, which is how the
/// schema is checked once, and is closed. Then both clients start: their `run()` goes on in a task
/// this object owns until ``close()``, or until the last copy of the database is gone.
final class PostgresClients: Sendable {
    /// Which client a unit of work borrows from.
    enum Lane: Sendable {
        /// The pool every part of the database shares.
        case shared
        /// The chunk-lease renewer's own connection.
        case leases
    }

    let location: PostgresLocation
    /// Connections at most in the shared pool.
    let size: Int
    private let state = Mutex(State())

    private struct Clients: Sendable {
        var shared: PostgresClient
        var leases: PostgresClient
        /// The tasks running the clients' `run()` (cancelling one closes its client's connections).
        var runs: [Task<Void, Never>]
    }

    private enum Phase: Sendable {
        case idle
        case opening(Task<Void, any Error>)
        case open(Clients)
        case closed
    }

    private struct State: Sendable {
        var phase = Phase.idle
        /// The schema version last read (nil: no digest schema).
        var schema: Int?
        /// When a unit of each lane last lost its connection.
        var lastLoss: [Lane: ContinuousClock.Instant] = [:]
    }

    init(location: PostgresLocation, size: Int) {
        self.location = location
        self.size = max(1, size)
    }

    deinit {
        if case .open(let clients) = state.withLock({ $0.phase }) {
            for run in clients.runs { run.cancel() }
        }
    }

    /// The client of `lane`, opening the connections first when this is the first use. Cancelling the
    /// calling task ends its wait for the opening.
    func client(_ lane: Lane) async throws -> PostgresClient {
        while true {
            let opening: Task<Void, any Error>
            let phase = state.withLock { state -> Phase in
                if case .idle = state.phase {
                    state.phase = .opening(Task { try await self.open() })
                }
                return state.phase
            }
            switch phase {
            case .open(let clients): return lane == .shared ? clients.shared : clients.leases
            case .closed: throw closedError
            case .opening(let task): opening = task
            case .idle: continue
            }
            do {
                try await withTaskCancellationHandler { try await opening.value } onCancel: { opening.cancel() }
            } catch is CancellationError where !Task.isCancelled {
                // Another caller was cancelled while it opened: open again.
            }
        }
    }

    /// Records that a unit of `lane` lost its connection now.
    func noteLoss(_ lane: Lane) {
        state.withLock { $0.lastLoss[lane] = .now }
    }

    /// When a unit of `lane` last lost its connection.
    func lastLoss(_ lane: Lane) -> ContinuousClock.Instant? {
        state.withLock { $0.lastLoss[lane] }
    }

    /// The schema version read when the database was opened, or since.
    var schemaVersion: Int? { state.withLock { $0.schema } }

    /// Records the schema version read (a migration's, or a check's).
    func setSchemaVersion(_ version: Int?) {
        state.withLock { $0.schema = version }
    }

    /// Ends both clients (their connections are closed when this returns) and fails later calls.
    func close() async {
        let phase = state.withLock { state -> Phase in
            let phase = state.phase
            state.phase = .closed
            return phase
        }
        switch phase {
        case .opening(let task):
            // It stops its clients itself once it sees the database closed.
            _ = await task.result
        case .open(let clients):
            for run in clients.runs { run.cancel() }
            // The clients close their connections as their runs end. Waited for, but not forever: a
            // run of postgres-nio's client was seen not to end under heavy load, and a close that
            // never returns would hang its caller.
            await Self.wait(for: clients.runs, atMost: .seconds(15))
        case .idle, .closed:
            break
        }
    }

    /// Returns once every run has ended, or after `limit`. Raced, not cancelled: awaiting a task's
    /// value ignores cancellation, and a task group would wait for its children anyway (the wait this
    /// replaces did, so it never returned while a run hung).
    private static func wait(for runs: [Task<Void, Never>], atMost limit: Duration) async {
        let first = OneShot<Void>()
        let timer = Task {
            try? await Task.sleep(for: limit)
            first.resume(.success(()))
        }
        let ended = Task {
            for run in runs { await run.value }
            first.resume(.success(()))
        }
        try? await withCheckedThrowingContinuation { first.wait($0) }
        timer.cancel()
        _ = ended
    }

    var isClosed: Bool {
        state.withLock { if case .closed = $0.phase { true } else { false } }
    }

    var closedError: PostgresStoreError { PostgresStoreError("\(location): the database is closed") }

    /// The first connection, then the clients.
    private func open() async throws {
        do {
            let version = try await firstConnection()
            try Task.checkCancellation()
            let (shared, sharedRun) = makeClient(.shared)
            let (leases, leasesRun) = makeClient(.leases)
            let kept = state.withLock { state -> Bool in
                guard case .opening = state.phase else { return false }
                state.phase = .open(
                    Clients(shared: shared, leases: leases, runs: [sharedRun, leasesRun]))
                state.schema = version
                return true
            }
            if !kept {
                sharedRun.cancel()
                leasesRun.cancel()
                await sharedRun.value
                await leasesRun.value
                throw closedError
            }
        } catch {
            state.withLock { state in
                if case .opening = state.phase { state.phase = .idle }
            }
            throw error
        }
    }

    /// A client of `lane` and the task running it.
    private func makeClient(_ lane: Lane) -> (PostgresClient, Task<Void, Never>) {
        // The shared pool keeps a connection open while it runs (docs/005, W1); the renewer's one unit
        // at a time never queues behind another.
        let configuration =
            lane == .shared ? location.clientConfiguration(connections: size, minimum: 1) : location.clientConfiguration(connections: 1)
        let client = PostgresClient(configuration: configuration, backgroundLogger: PostgresConnection.quiet)
        return (client, Task { await client.run() })
    }

    /// Connects directly, reads the schema version and closes the connection. A connection that cannot
    /// be made is retried with backoff for up to 2 s (the server may be starting); one the server
    /// refused (a wrong password, no such database) is not.
    private func firstConnection() async throws -> Int? {
        let configuration = try location.connectionConfiguration()
        let window = Duration.seconds(2)
        let started = ContinuousClock.now
        var delay = Duration.milliseconds(100)
        while true {
            do {
                let connection = try await PostgresConnection.connect(
                    on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: 0,
                    logger: PostgresConnection.quiet)
                let version: Int?
                do {
                    version = try await PostgresSchema.version(connection)
                } catch {
                    try? await connection.close()
                    throw error
                }
                try? await connection.close()
                return version
            } catch {
                if error is CancellationError { throw error }
                guard PostgresPool.isConnectionLoss(error), started.duration(to: .now) + delay < window else {
                    throw PostgresPool.describe(error, location: location, window: window)
                }
                try await Task.sleep(for: delay * Double.random(in: 0.5...1.5))
                delay = min(delay * 2, .seconds(5))
            }
        }
    }
}
