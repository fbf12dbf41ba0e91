public import ServiceLifecycle

/// The database's connections run as a `Service`, by whoever owns the database: in a `ServiceGroup`
/// beside the services that use it, or for the length of a body with ``PostgresDatabase/withRunning(isolation:_:)``.
extension PostgresDatabase: Service {
    /// Runs the database's clients (postgres-nio's `PostgresClient`s) until the calling task is
    /// cancelled, the service group shuts down gracefully, or ``close()``; their connections are
    /// closed when it returns, and the database is closed: later calls fail. Throws if it is already
    /// running or closed.
    ///
    /// In a `ServiceGroup`, list the database before the services that use it: the group shuts
    /// services down in reverse order, so theirs end first.
    public func run() async throws {
        try await clients.run()
    }

    /// Marks the database running now (so no call waits for the run to begin) and runs its clients
    /// in a task of their own until it is closed or the task is cancelled: for the tests and the
    /// CLI, which open stores outside any scope that could run them.
    package func runningInTask() throws -> Task<Void, Never> {
        try clients.start()
        return Task { [clients] in await clients.runStarted() }
    }

    /// Runs `body` while the database's clients run, then closes the database (also when `body`
    /// throws).
    ///
    /// ```swift
    /// let database = try PostgresDatabase.postgres(url: "postgres://digest@db.internal/digest")
    /// let stats = try await database.withRunning { try await database.outboxStats(now: 0) }
    /// ```
    public func withRunning<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self, returning: T.self, isolation: isolation) { group in
            try clients.start()
            group.addTask { await clients.runStarted() }
            let value: T
            do {
                value = try await body()
            } catch {
                await close()
                throw error
            }
            await close()
            try await group.waitForAll()
            return value
        }
    }
}
