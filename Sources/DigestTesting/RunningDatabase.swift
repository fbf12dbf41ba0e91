package import DigestPostgres

/// A PostgreSQL store's service, run for as long as this object lives: for a fixture that opens a
/// store without a scope of its own (``StoreHarness``, which a test keeps until it ends). Code with
/// a scope runs the store with `withRunning { }` instead.
final class RunningDatabase: Sendable {
    private let run: Task<Void, Never>

    init(_ database: PostgresDatabase) throws {
        run = try database.runningInTask()
    }

    deinit {
        run.cancel()
    }
}

extension PostgresDatabase {
    /// This database, run until it is closed or the test process ends: for a test that opens a
    /// store outside any scope (its connection stays open meanwhile). Code with a scope runs the
    /// store with `withRunning { }` instead.
    package func runningUntilClosed() throws -> PostgresDatabase {
        _ = try runningInTask()
        return self
    }
}
