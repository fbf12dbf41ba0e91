import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// One PostgreSQL connection, driven through PostgresNIO's async API, that runs units of work (a
/// statement, or a transaction of several) one at a time.
///
/// Several tasks may share a session (a sender's dispatcher, outcome writer and lease keeper share
/// one): their units queue in the order they arrive and each runs alone on the connection, so a
/// `BEGIN … COMMIT` never interleaves with another unit's statements. An actor alone would not
/// ensure that (it lets another call in at every `await`), so each unit holds the session's FIFO
/// lock from its first statement to its last.
///
/// A lost connection (server restart, network cut, administrator shutdown) is reopened with
/// exponential backoff and jitter, and the interrupted unit of work is run again from its start:
/// every unit the store runs is safe to repeat (idempotent inserts, state-checked updates, and
/// leases that expire). The first connection of a session fails fast instead, so a wrong host or
/// password gives one clear line at once.
///
/// Whoever opens a session closes it (``close()``): PostgresNIO requires a connection to be closed
/// before it is released.
actor PostgresSession {
    let location: PostgresLocation
    /// How long a lost connection is retried before the error is thrown.
    let reconnectWindow: Duration
    private let configuration: PostgresConnection.Configuration
    private var connection: PostgresConnection?
    private var connected = false
    private var closed = false
    /// Whether a unit of work holds the connection.
    private var busy = false
    /// Units waiting for the connection, first come first served.
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private static let connectionIDs = Mutex(0)

    init(location: PostgresLocation, reconnectWindow: Duration = .seconds(60)) throws(PostgresStoreError) {
        self.location = location
        self.reconnectWindow = reconnectWindow
        self.configuration = try location.configuration()
    }

    /// Runs `body` on the connection, alone, reopening the connection and running `body` again after
    /// a connection loss. Cancelling the calling task ends the wait between attempts (and a statement
    /// whose rows are still being read) with `CancellationError`.
    func perform<T: Sendable>(_ body: @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        guard !closed else { throw PostgresStoreError("\(location): the session is closed") }
        let started = ContinuousClock.now
        var delay = Duration.milliseconds(100)
        while true {
            do {
                let connection = try await open()
                return try await body(connection)
            } catch {
                if error is CancellationError { throw error }
                let retryable = Self.isConnectionLoss(error)
                if retryable {
                    await dropConnection()
                }
                // Before the first success, give up quickly: the address or the server is wrong.
                let window = connected ? reconnectWindow : .seconds(2)
                guard retryable, started.duration(to: .now) + delay < window else {
                    throw describe(error)
                }
                try await Task.sleep(for: delay * Double.random(in: 0.5...1.5))
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// Runs `body` inside `BEGIN … COMMIT` (rolled back when `body` throws), again from the start
    /// after a connection loss.
    func transaction<T: Sendable>(_ body: @Sendable (PostgresConnection) async throws -> T) async throws -> T {
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

    /// Waits for the unit of work in progress (and those queued before this call), then closes the
    /// connection; later units fail.
    func close() async {
        await acquire()
        defer { release() }
        closed = true
        await dropConnection()
    }

    /// Takes the connection, or waits behind the units that asked for it first.
    private func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Hands the connection to the next waiting unit, if any (it stays busy), or frees it.
    private func release() {
        if waiting.isEmpty {
            busy = false
        } else {
            waiting.removeFirst().resume()
        }
    }

    private func open() async throws -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        await dropConnection()
        let id = Self.connectionIDs.withLock { value -> Int in
            value += 1
            return value
        }
        let opened = try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: id, logger: PostgresConnection.quiet)
        connection = opened
        connected = true
        return opened
    }

    /// Closes the connection and waits until its channel is closed: postgres-nio asserts that a
    /// connection is closed before it is released (a debug build crashed here on a server restart).
    private func dropConnection() async {
        if let connection {
            try? await connection.close()
        }
        connection = nil
    }

    /// Whether an error means the connection is gone (or could not be made), rather than that the
    /// statement failed.
    static func isConnectionLoss(_ error: any Error) -> Bool {
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
    nonisolated func describe(_ error: any Error) -> PostgresStoreError {
        if let error = error as? PostgresStoreError { return error }
        let place = location.description
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
                    "\(place): the server closed the connection and did not come back within \(reconnectWindow)", kind: .unavailable)
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

extension PostgresSession {
    /// Opens a session for `body` and closes it afterwards, also when `body` throws.
    static func with<T>(
        location: PostgresLocation, reconnectWindow: Duration, _ body: (PostgresSession) async throws -> T
    ) async throws -> T {
        let session = try PostgresSession(location: location, reconnectWindow: reconnectWindow)
        let value: T
        do {
            value = try await body(session)
        } catch {
            await session.close()
            throw error
        }
        await session.close()
        return value
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
