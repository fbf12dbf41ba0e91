import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// The connections of one ``PostgresDatabase``, for its whole life: a `PostgresClient` (postgres-nio's
/// pool) of at most `size` connections that every part of the database borrows from, one connection
/// per unit of work, and a second client of one connection for the chunk-lease renewer alone, so a
/// renewal never waits behind a slow query.
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
        /// The tasks running the clients' `run()` (cancelling one closes its client's connections),
        /// by client.
        var runs: [ObjectIdentifier: Task<Void, Never>]
        /// Runs of clients replaced (``PostgresClients/replace(_:of:)``), cancelled, not waited for.
        var replaced: [Task<Void, Never>] = []
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
            for run in clients.runs.values { run.cancel() }
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
            for run in clients.replaced { run.cancel() }
            for run in clients.runs.values { run.cancel() }
            // The clients close their connections as their runs end (replaced ones were cancelled when
            // replaced). Waited for, but not forever: a run of postgres-nio's client was seen not to
            // end under heavy load, and a close that never returns would hang its caller.
            await Self.wait(for: Array(clients.runs.values) + clients.replaced, atMost: .seconds(15))
        case .idle, .closed:
            break
        }
    }

    /// Returns once every run has ended, or after `limit`. Raced, not cancelled: awaiting a task's
    /// value ignores cancellation, and a task group would wait for its children anyway (the wait this
    /// replaces did, so it never returned while a run hung).
    private static func wait(for runs: [Task<Void, Never>], atMost limit: Duration) async {
        let first = PostgresPool.OneShot<Void>()
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
                    Clients(
                        shared: shared, leases: leases,
                        runs: [ObjectIdentifier(shared): sharedRun, ObjectIdentifier(leases): leasesRun]))
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
        let client = PostgresClient(
            configuration: location.clientConfiguration(connections: lane == .shared ? size : 1), backgroundLogger: PostgresConnection.quiet)
        return (client, Task { await client.run() })
    }

    /// Replaces `client`, which gave no connection in time, with a new client of `lane`, and returns
    /// the lane's client (nil once closed). postgres-nio's pool can stop making connections after a
    /// server restart (seen once under load: after the server refused one connection while it
    /// recovered, the pool made no other and a request waited for half an hour); a new client starts
    /// afresh. The old one is cancelled, not waited for.
    func replace(_ client: PostgresClient, of lane: Lane) -> PostgresClient? {
        state.withLock { state -> PostgresClient? in
            guard case .open(var clients) = state.phase else { return nil }
            let current = lane == .shared ? clients.shared : clients.leases
            guard current === client else { return current }  // another unit replaced it already
            let (fresh, run) = makeClient(lane)
            if let old = clients.runs.removeValue(forKey: ObjectIdentifier(client)) {
                old.cancel()
                clients.replaced.append(old)
            }
            clients.runs[ObjectIdentifier(fresh)] = run
            if lane == .shared { clients.shared = fresh } else { clients.leases = fresh }
            state.phase = .open(clients)
            return fresh
        }
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

/// Units of work on a database's connections: a statement, or a transaction of several, each on a
/// connection borrowed from the database's client for the unit's whole duration, so a `BEGIN …
/// COMMIT` never interleaves with another unit's statements. Units of one caller run on whichever
/// connection is free; waiting for one ends when the calling task is cancelled.
///
/// A lost connection (server restart, network cut, administrator shutdown) is retried with
/// exponential backoff and jitter for up to `reconnectWindow`, and the interrupted unit of work runs
/// again from its start on another connection: every unit the store runs is safe to repeat
/// (idempotent inserts, state-checked updates, and leases that expire). So is a unit the server
/// ended as a deadlock (two units of one process no longer wait for each other in a queue) or a
/// serialization failure.
struct PostgresPool: Sendable {
    let clients: PostgresClients
    let lane: PostgresClients.Lane
    /// How long a lost connection is retried before the error is thrown (zero: never).
    let reconnectWindow: Duration

    var location: PostgresLocation { clients.location }

    /// Runs `body` on a borrowed connection, again on another after a connection loss. Cancelling the
    /// calling task ends a wait for a connection or between attempts with `CancellationError`.
    func perform<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        var client = try await clients.client(lane)
        let started = ContinuousClock.now
        var delay = Duration.milliseconds(100)
        var retrying = false
        var staleWaits = 0
        while true {
            do {
                // A wait for a connection is bounded (a client that gives none in time is replaced):
                // after a loss, by what is left of the window, at least a few seconds; otherwise by
                // the window or five minutes, whichever is longer: units before it may be slow, and
                // a client replaced while it still works leaves its connections to close on their own.
                let wait = retrying ? max(reconnectWindow - started.duration(to: .now), .seconds(5)) : max(reconnectWindow, .seconds(300))
                return try await Self.borrow(client, until: .now + wait, stale: { clients.lastLoss(lane) }, body)
            } catch {
                if Task.isCancelled { throw CancellationError() }
                if error is CancellationError { throw error }
                if Self.isConnectionLoss(error) { clients.noteLoss(lane) }
                if let noConnection = error as? NoConnection {
                    // A wait that outlived a loss by ``staleWait`` asks the same client again, once:
                    // postgres-nio's pool can forget a request queued while its connections were lost
                    // (seen under load: the others were served, that one never, with connections idle).
                    if noConnection.stale && staleWaits == 0 {
                        staleWaits += 1
                    } else {
                        guard let fresh = clients.replace(client, of: lane) else { throw clients.closedError }
                        client = fresh
                    }
                }
                if clients.isClosed { throw clients.closedError }
                guard Self.isRetryable(error), started.duration(to: .now) + delay < reconnectWindow else {
                    throw describe(error)
                }
                retrying = true
                try await Task.sleep(for: delay * Double.random(in: 0.5...1.5))
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// Runs `body` inside `BEGIN … COMMIT` (rolled back when `body` throws), again from the start
    /// after a connection loss.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await perform { connection in
            try await connection.run("BEGIN")
            do {
                let value = try await body(connection)
                try await connection.run("COMMIT")
                return value
            } catch {
                if !Self.isConnectionLoss(error) { _ = try? await connection.run("ROLLBACK") }
                throw error
            }
        }
    }

    /// Rows of one statement.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await perform { try await $0.rows(query) }
    }

    /// Runs one statement.
    func run(_ query: PostgresQuery) async throws {
        try await perform { try await $0.run(query) }
    }

    /// Whether the table or view `relation` has a column `column` (an adopter's view of the history
    /// may lack the columns the contract gained later).
    func relation(_ relation: String, hasColumn column: String) async throws -> Bool {
        try await rows(
            """
            SELECT EXISTS (SELECT 1 FROM pg_attribute
                           WHERE attrelid = to_regclass(\(relation)) AND attname = \(column) AND NOT attisdropped)
            """
        ).first?.decode(Bool.self) ?? false
    }

    /// The client gave no connection: it could not make one (in time), or it was shut down;
    /// `stale` when the wait outlived a connection loss of its lane by ``staleWait``.
    struct NoConnection: Error {
        var stale = false
    }

    /// How long a wait for a connection may go on after a unit of its lane lost one (the server
    /// restarted, say), or after it began when that loss was more recent than this: long enough for
    /// the units queued before it to run again.
    static let staleWait = Duration.seconds(15)

    /// Runs `body` on a connection of `client`, held for its whole duration. Waiting for the
    /// connection ends at `deadline`, or ``staleWait`` after a recent connection loss of the lane
    /// (`lastLoss`) or after the start of a wait that began within ``staleWait`` of one, with
    /// ``NoConnection``; a body still waiting on its connection two seconds after that connection
    /// closed ends with ``ConnectionLost``.
    ///
    /// The unit runs in a task of its own, which a wait given up (or a body abandoned) leaves behind,
    /// cancelled, instead of awaiting: postgres-nio 1.33 can lose a request for a connection queued
    /// while its connections were lost, and a query written as its connection closed, and then
    /// neither answers nor cancels them (seen under load after a server restart), so a task group
    /// (which awaits its children) would wait forever. Such a request, if ever served, hands its
    /// connection back at once.
    private static func borrow<T: Sendable>(
        _ client: PostgresClient, until deadline: ContinuousClock.Instant, stale lastLoss: @escaping @Sendable () -> ContinuousClock.Instant?,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let race = LeaseRace()
        let outcome = OneShot<T>()
        let waitStarted = ContinuousClock.now
        let work = Task {
            do {
                let value = try await client.withConnection { connection in
                    guard race.lease(connection) else { throw NoConnection() }
                    return try await body(connection)
                }
                outcome.resume(.success(value))
            } catch {
                let state = race.state.load(ordering: .acquiring)
                outcome.resume(.failure(state == LeaseRace.leased ? error : NoConnection(stale: state == LeaseRace.gaveUpAfterLoss)))
            }
        }
        let watchdog = Task {
            var closedSince: ContinuousClock.Instant?
            while true {
                switch race.state.load(ordering: .acquiring) {
                case LeaseRace.waiting:
                    // The deadline, or a loss near the wait.
                    var until = deadline
                    var stale = false
                    if let loss = lastLoss(), loss + staleWait > waitStarted, max(loss, waitStarted) + staleWait < until {
                        until = max(loss, waitStarted) + staleWait
                        stale = true
                    }
                    if ContinuousClock.now >= until {
                        let giveUp = stale ? LeaseRace.gaveUpAfterLoss : LeaseRace.gaveUp
                        if race.state.compareExchange(expected: LeaseRace.waiting, desired: giveUp, ordering: .acquiringAndReleasing).exchanged {
                            work.cancel()
                            outcome.resume(.failure(NoConnection(stale: stale)))
                            return
                        }
                    }
                case LeaseRace.leased:
                    // A closed connection answers nothing more: a body still on it is abandoned.
                    if race.connection?.isClosed == true {
                        let since = closedSince ?? .now
                        closedSince = since
                        if since.duration(to: .now) > .seconds(2) {
                            work.cancel()
                            outcome.resume(.failure(ConnectionLost()))
                            return
                        }
                    }
                default:
                    return
                }
                do {
                    try await Task.sleep(for: .milliseconds(250))
                } catch {
                    return  // the unit ended
                }
            }
        }
        defer { watchdog.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { outcome.wait($0) }
        } onCancel: {
            // Still waiting: give up now. Leased: the body hears the cancellation and ends.
            if race.state.compareExchange(expected: LeaseRace.waiting, desired: LeaseRace.gaveUp, ordering: .acquiringAndReleasing).exchanged {
                outcome.resume(.failure(CancellationError()))
            }
            work.cancel()
        }
    }

    /// A unit's connection closed under it and its body never heard: the unit runs again.
    struct ConnectionLost: Error {}

    /// Who won a unit's connection: the connection (leased) or the wait's end (given up).
    private final class LeaseRace: Sendable {
        static let waiting = 0, leased = 1, gaveUp = 2, gaveUpAfterLoss = 3
        let state = Atomic<Int>(waiting)
        private let leasedConnection = Mutex<PostgresConnection?>(nil)

        /// Takes `connection` for the unit unless its wait was given up.
        func lease(_ connection: PostgresConnection) -> Bool {
            leasedConnection.withLock { $0 = connection }
            return state.compareExchange(expected: Self.waiting, desired: Self.leased, ordering: .acquiringAndReleasing).exchanged
        }

        var connection: PostgresConnection? { leasedConnection.withLock { $0 } }
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

    static func isRetryable(_ error: any Error) -> Bool {
        if error is NoConnection || isConnectionLoss(error) { return true }
        // 40P01 deadlock detected, 40001 serialization failure: the server rolled the unit back.
        let state = (error as? PSQLError)?.serverInfo?[.sqlState]
        return state == "40P01" || state == "40001"
    }

    /// Whether an error means the connection is gone (or could not be made), rather than that the
    /// statement failed.
    static func isConnectionLoss(_ error: any Error) -> Bool {
        if error is ConnectionLost { return true }
        if let error = error as? PSQLError {
            switch error.code {
            case .connectionError, .serverClosedConnection, .uncleanShutdown, .clientClosedConnection:
                return true
            case .server:
                let state = error.serverInfo?[.sqlState] ?? ""
                // 57P01–57P03: administrator shutdown, crash shutdown, cannot connect now; 08: connection exceptions.
                return state.hasPrefix("57P") || state.hasPrefix("08")
            default:
                return false
            }
        }
        if error is PostgresTransactionError { return false }
        return error is IOError || error is ChannelError || error is NIOConnectionError
    }

    /// One line naming the database and what went wrong, never the password.
    func describe(_ error: any Error) -> PostgresStoreError {
        Self.describe(error, location: location, window: reconnectWindow)
    }

    static func describe(_ error: any Error, location: PostgresLocation, window: Duration) -> PostgresStoreError {
        if let error = error as? PostgresStoreError { return error }
        let place = location.description
        if error is NoConnection {
            return PostgresStoreError("\(place): cannot connect (no connection to the server within \(window))", kind: .unavailable)
        }
        if let error = error as? PSQLError {
            if let info = error.serverInfo, let message = info[.message] {
                let state = info[.sqlState]
                var text = "\(place): \(message)"
                if let detail = info[.detail] { text += " (\(detail))" }
                if let state { text += " [SQLSTATE \(state)]" }
                return PostgresStoreError(text, sqlState: state)
            }
            switch error.code {
            case .connectionError:
                return PostgresStoreError("\(place): cannot connect (\(Self.reason(error.underlying)))", kind: .unavailable)
            case .serverClosedConnection, .uncleanShutdown:
                return PostgresStoreError(
                    "\(place): the server closed the connection and did not come back within \(window)", kind: .unavailable)
            case .sslUnsupported:
                return PostgresStoreError(
                    "\(place): the server does not offer TLS, but sslmode=\(location.sslMode.rawValue) requires it", kind: .configuration)
            case .authMechanismRequiresPassword:
                return PostgresStoreError(
                    "\(place): the server asks for a password and none was given (set PGPASSWORD or a .pgpass entry)", kind: .configuration)
            default:
                return PostgresStoreError("\(place): \(error.code)")
            }
        }
        if error is NIOConnectionError || error is IOError || error is ChannelError {
            return PostgresStoreError("\(place): cannot connect (\(Self.reason(error)))", kind: .unavailable)
        }
        return PostgresStoreError("\(place): \(error)")
    }

    private static func reason(_ error: (any Error)?) -> String {
        guard let error else { return "no reason given" }
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first { return reason(first.error) }
            if let dns = error.dnsAAAAError ?? error.dnsAError { return "cannot resolve the host: \(dns)" }
            return "no address to connect to"
        }
        if let error = error as? IOError { return error.description }
        return "\(error)"
    }
}

extension PostgresConnection {
    /// Rows of one statement, all of them read before this returns.
    ///
    /// Through the query whose result the event loop gathers whole and hands over once (awaited,
    /// never waited on), rather than the row sequence, which hands rows over one `await` at a time
    /// under back-pressure: a chunk's few thousand rows cost the run measurably more CPU that way
    /// (BENCHMARKS.md, "Issue 12 side by side").
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        let result: EventLoopFuture<PostgresQueryResult> = self.query(query, logger: Self.quiet)
        return try await result.get().rows
    }

    /// Runs one statement to its end (its error, if any, surfaces here rather than being dropped
    /// with an unread result).
    func run(_ query: PostgresQuery) async throws {
        _ = try await rows(query)
    }

    /// Runs a statement that returns a row for each row it changed (`RETURNING 1`); returns how
    /// many it changed.
    func changed(_ query: PostgresQuery) async throws -> Int {
        try await rows(query).count
    }

    static let quiet: Logger = {
        var logger = Logger(label: "digest.postgres")
        logger.logLevel = .critical
        return logger
    }()
}
