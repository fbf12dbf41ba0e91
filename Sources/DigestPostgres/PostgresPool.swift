import PostgresNIO

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
/// serialization failure. Each unit borrows its connection through ``PostgresLease``, which keeps
/// postgres-nio from holding it for good.
struct PostgresPool: Sendable {
    let clients: PostgresClients
    let lane: PostgresClients.Lane
    /// How long a lost connection is retried before the error is thrown (zero: never).
    let reconnectWindow: Duration
    var lease = PostgresLease()

    var location: PostgresLocation { clients.location }

    /// Runs `body` on a borrowed connection, again on another after a connection loss. Cancelling the
    /// calling task ends a wait for a connection or between attempts with `CancellationError`.
    func perform<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let client = try await clients.client(lane)
        let started = ContinuousClock.now
        var delay = Duration.milliseconds(100)
        var retrying = false
        while true {
            do {
                // A wait for a connection is bounded: after a loss, by what is left of the window, at
                // least a few seconds; otherwise by the window or five minutes, whichever is longer
                // (the units before it may be slow).
                let wait = retrying ? max(reconnectWindow - started.duration(to: .now), .seconds(5)) : max(reconnectWindow, .seconds(300))
                return try await lease.borrow(client, until: .now + wait, lastLoss: { [clients, lane] in clients.lastLoss(lane) }, body)
            } catch {
                if Task.isCancelled { throw CancellationError() }
                if error is CancellationError { throw error }
                if Self.isConnectionLoss(error) { clients.noteLoss(lane) }
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


    /// Runs `body` inside `BEGIN … COMMIT` (rolled back when `body` throws, or with `commit` false:
    /// a dry run that counts what its statements would change), again from the start after a
    /// connection loss.
    func transaction<T: Sendable>(commit: Bool = true, _ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await perform { connection in
            try await connection.run("BEGIN")
            do {
                let value = try await body(connection)
                try await connection.run(commit ? "COMMIT" : "ROLLBACK")
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

    /// Rows of one named prepared statement.
    func rows<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [Statement.Row]
    where Statement.Row: Sendable {
        try await perform { try await $0.rows(statement) }
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
}
