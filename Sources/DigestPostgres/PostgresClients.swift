import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The connections of one ``PostgresDatabase``: a `PostgresClient` (postgres-nio's pool) of at most
/// `size` connections (one kept open, docs/005, W1) that every part of the database borrows from, one
/// connection per unit of work, and a second client of one connection for the chunk-lease renewer
/// alone, so a renewal never waits behind a slow query.
///
/// Run by the database's owner, never by itself: ``run()`` runs both clients until its task is
/// cancelled, its service group shuts down, or ``close()``; then every call fails as closed. A call
/// made before `run()` waits for it for up to ``startWait`` (a service group starts its services
/// at once, in no fixed order), then fails saying that nothing runs the database.
///
/// The first call connects once directly, not through the pool, so that a wrong host, password or
/// TLS setting fails at once with the server's own reason (the pool would retry it in the background
/// and only say that it could not connect); that connection reads the schema version, which is how
/// the schema is checked once, and is closed.
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
    private let shared: PostgresClient
    private let leases: PostgresClient
    private let state = Mutex(State())

    /// How long a call made before ``run()`` waits for it.
    static let startWait = Duration.seconds(5)

    private enum Life {
        case idle, running, stopping, closed
    }

    private enum Opening {
        case no
        case opening(Task<Int?, any Error>)
        case open
    }

    private enum Stop {
        case none
        case waiting(CheckedContinuation<Void, Never>)
        case requested
    }

    private struct State: Sendable {
        var life = Life.idle
        var opening = Opening.no
        /// Calls waiting for ``run()`` to begin, by number.
        var starting: [Int: CheckedContinuation<Void, any Error>] = [:]
        var nextCall = 0
        /// ``run()``'s wait for the end.
        var stop = Stop.none
        /// ``close()`` calls waiting for ``run()`` to end.
        var ended: [CheckedContinuation<Void, Never>] = []
        /// The schema version last read (nil: no digest schema).
        var schema: Int?
        /// When a unit of each lane last lost its connection.
        var lastLoss: [Lane: ContinuousClock.Instant] = [:]
    }

    init(location: PostgresLocation, size: Int) {
        self.location = location
        self.size = max(1, size)
        // The shared pool keeps a connection open while it runs (docs/005, W1); the renewer's one unit
        // at a time never queues behind another.
        shared = PostgresClient(
            configuration: location.clientConfiguration(connections: self.size, minimum: 1), backgroundLogger: PostgresConnection.quiet)
        leases = PostgresClient(configuration: location.clientConfiguration(connections: 1), backgroundLogger: PostgresConnection.quiet)
    }

    // MARK: The run

    /// Runs both clients until the calling task is cancelled, the service group shuts down
    /// gracefully, or ``close()``; their connections are closed when it returns. Throws if the
    /// database is already running or closed (a client runs once).
    func run() async throws {
        try start()
        await runStarted()
    }

    /// Marks the database running (calls from now on go to the clients, which queue them until
    /// ``runStarted()`` runs the clients). Throws if it is already running or closed.
    func start() throws(PostgresStoreError) {
        let waiting = try state.withLock { state throws(PostgresStoreError) -> [CheckedContinuation<Void, any Error>] in
            switch state.life {
            case .idle: state.life = .running
            case .running, .stopping: throw PostgresStoreError("\(location): the database is already running")
            case .closed: throw closedError
            }
            defer { state.starting = [:] }
            return Array(state.starting.values)
        }
        for call in waiting { call.resume() }
    }

    /// Runs the clients of a database ``start()`` marked running, until the end (``run()``).
    func runStarted() async {
        await cancelWhenGracefulShutdown { [shared, leases] in
            await withDiscardingTaskGroup { group in
                group.addTask { await shared.run() }
                group.addTask { await leases.run() }
                await self.untilStopped()
                group.cancelAll()
            }
        }
        let closing = state.withLock { state in
            state.life = .closed
            defer { state.ended = [] }
            return state.ended
        }
        for call in closing { call.resume() }
    }

    /// Returns once ``close()`` is called or the calling task is cancelled.
    private func untilStopped() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let stopped = state.withLock { state -> Bool in
                    if case .requested = state.stop { return true }
                    state.stop = .waiting(continuation)
                    return false
                }
                if stopped { continuation.resume() }
            }
        } onCancel: {
            requestStop()
        }
    }

    private func requestStop() {
        let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.stop = .requested }
            if case .waiting(let continuation) = state.stop { return continuation }
            return nil
        }
        waiting?.resume()
    }

    /// Ends both clients (their connections are closed when this returns, once ``run()`` has
    /// ended) and fails later calls. Closing twice is closing once.
    func close() async {
        let (wait, starting) = state.withLock { state -> (Bool, [CheckedContinuation<Void, any Error>]) in
            if case .opening(let task) = state.opening { task.cancel() }
            switch state.life {
            case .idle:
                state.life = .closed
                defer { state.starting = [:] }
                return (false, Array(state.starting.values))
            case .running:
                state.life = .stopping
                return (true, [])
            case .stopping:
                return (true, [])
            case .closed:
                return (false, [])
            }
        }
        for call in starting { call.resume(throwing: closedError) }
        guard wait else { return }
        requestStop()
        await withCheckedContinuation { continuation in
            let ended = state.withLock { state -> Bool in
                if case .closed = state.life { return true }
                state.ended.append(continuation)
                return false
            }
            if ended { continuation.resume() }
        }
    }

    var isRunning: Bool {
        state.withLock { if case .running = $0.life { true } else { false } }
    }

    var isClosed: Bool {
        state.withLock { state in
            switch state.life {
            case .stopping, .closed: true
            case .idle, .running: false
            }
        }
    }

    var closedError: PostgresStoreError { PostgresStoreError("\(location): the database is closed") }

    var notRunningError: PostgresStoreError {
        PostgresStoreError(
            "\(location): the database is not running: run it (PostgresDatabase.run(), as a Service) or call withRunning { }",
            kind: .configuration)
    }

    // MARK: Calls

    /// The client of `lane`, once the database runs and the first connection has checked the
    /// server. Cancelling the calling task ends its wait.
    func client(_ lane: Lane) async throws -> PostgresClient {
        try await untilRunning()
        while true {
            let opening = state.withLock { state -> Task<Int?, any Error>? in
                switch state.opening {
                case .open:
                    return nil
                case .opening(let task):
                    return task
                case .no:
                    let task = Task { try await self.firstConnection() }
                    state.opening = .opening(task)
                    return task
                }
            }
            guard let opening else { break }
            do {
                let version = try await withTaskCancellationHandler { try await opening.value } onCancel: { opening.cancel() }
                state.withLock { state in
                    state.opening = .open
                    state.schema = version
                }
            } catch is CancellationError where !Task.isCancelled && !isClosed {
                // Another caller was cancelled while it opened: open again.
                state.withLock { state in if case .opening = state.opening { state.opening = .no } }
            } catch {
                state.withLock { state in if case .opening = state.opening { state.opening = .no } }
                throw isClosed ? closedError : error
            }
        }
        if isClosed { throw closedError }
        return lane == .shared ? shared : leases
    }

    /// Returns once ``run()`` has begun; throws once the database is closed, or ``startWait`` after
    /// the call when nothing runs it.
    private func untilRunning() async throws {
        let number = try state.withLock { state throws(PostgresStoreError) -> Int? in
            switch state.life {
            case .running: return nil
            case .stopping, .closed: throw closedError
            case .idle:
                state.nextCall += 1
                return state.nextCall
            }
        }
        guard let number else { return }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await Task.sleep(for: Self.startWait)
                throw self.notRunningError
            }
            group.addTask {
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { continuation in
                        let now = self.state.withLock { state -> Result<Void, any Error>? in
                            switch state.life {
                            case .running: return .success(())
                            case .stopping, .closed: return .failure(self.closedError)
                            case .idle:
                                if Task.isCancelled { return .failure(CancellationError()) }
                                state.starting[number] = continuation
                                return nil
                            }
                        }
                        if let now { continuation.resume(with: now) }
                    }
                } onCancel: {
                    self.state.withLock { $0.starting.removeValue(forKey: number) }?.resume(throwing: CancellationError())
                }
            }
            defer { group.cancelAll() }
            try await group.next()
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
}
