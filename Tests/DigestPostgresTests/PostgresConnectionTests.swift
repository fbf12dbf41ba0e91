import DigestStore
import DigestTesting
import Foundation
import PostgresNIO
import Testing

@testable import DigestPostgres

/// A PostgresDatabase's connections: one bounded pool for all its parts, opened once with the schema
/// checked then, the lease renewer's connection beside it, a lost connection replaced and its unit run
/// again, and all of them closed by `close()`. The server's `pg_stat_activity` counts them.
@Suite struct PostgresConnectionTests {
    /// Runs `body` with a running, migrated database whose connections carry an application name of
    /// their own.
    static func withDatabase(
        connections: Int, _ body: (DigestPostgres.PostgresDatabase, _ application: String) async throws -> Void
    ) async throws {
        let application = "digest_\(UUID().uuidString.prefix(8).lowercased())"
        let url = try PostgresCluster.shared().makeDatabase("pool") + "&application_name=\(application)"
        let database = try DigestPostgres.PostgresDatabase.postgres(url: url, connections: connections)
        try await database.withRunning {
            _ = try await database.migrate()
            try await body(database, application)
        }
    }

    /// The server's backends of `application`.
    static func backends(_ application: String) throws -> Int {
        Int(try PostgresCluster.shared().sql(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(application)'", database: "postgres")) ?? -1
    }

    /// The backends of `application`: start, state and its last statement, one line each.
    static func activity(_ application: String) throws -> String {
        try PostgresCluster.shared().sql(
            "SELECT backend_start, state, state_change, left(query, 60) FROM pg_stat_activity WHERE application_name = '\(application)'",
            database: "postgres")
    }

    @Test func concurrentCallsShareOnePoolOfTheGivenSize() async throws {
        try await Self.withDatabase(connections: 2) { database, application in
            #expect(database.connections == 2)
            let calls = Task {
                for _ in 0..<60 {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for _ in 0..<20 { group.addTask { _ = try await database.outboxStats(now: 0) } }
                        try await group.waitForAll()
                    }
                }
            }
            var most = 0
            for _ in 0..<8 {
                most = max(most, try Self.backends(application))
                try await Task.sleep(for: .milliseconds(20))
            }
            try await calls.value
            // The pool's (the first connection, which read the schema version, may still be ending).
            #expect(most <= database.connections + 1, "\(most) backends")
            let idle = try Self.backends(application)
            #expect(idle >= 1 && idle <= database.connections, "\(idle) backends")
            await database.close()
            var left = try Self.backends(application)
            for _ in 0..<200 where left > 0 {
                try await Task.sleep(for: .milliseconds(50))
                left = try Self.backends(application)
            }
            #expect(left == 0, "still open: \((try? Self.activity(application)) ?? "")")
            await #expect(throws: PostgresStoreError.self) { _ = try await database.outboxStats(now: 0) }
        }
    }

    @Test func theSchemaIsCheckedWhenOpenedAndAMigrationMakesItCurrent() async throws {
        let url = try PostgresCluster.shared().makeDatabase("schema")
        let database = try DigestPostgres.PostgresDatabase.postgres(url: url)
        try await database.withRunning {
            do {
                _ = try await database.outboxStats(now: 0)
                Issue.record("a database without the schema was used")
            } catch let error as PostgresStoreError {
                #expect(error.description.contains("run `digest migrate --db <url>` first"), "\(error)")
            }
            #expect(try await database.migrate().from == 0)
            #expect(try await database.outboxStats(now: 0).total == 0)
        }
    }

    /// The backends of `application` running `pg_sleep`.
    static func sleeping(_ application: String) throws -> Int {
        Int(try PostgresCluster.shared().sql(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(application)' AND query LIKE '%pg_sleep%' AND state = 'active'",
            database: "postgres")) ?? -1
    }

    @Test func aCancelledCallStopsWaitingAndTheLeaseRenewerDoesNotWait() async throws {
        try await Self.withDatabase(connections: 1) { database, application in
            // The pool's one connection, busy until its statement is cancelled below.
            let pool = try await database.pool()
            let holder = Task { try await pool.run("SELECT pg_sleep(60)") }
            for _ in 0..<200 where try Self.sleeping(application) == 0 { try await Task.sleep(for: .milliseconds(50)) }
            #expect(try Self.sleeping(application) == 1)
            // The renewer's connection is its own: it answers while the pool's is still busy.
            let leases = PostgresPool(clients: database.clients, lane: .leases, reconnectWindow: .seconds(5))
            #expect(try await leases.rows("SELECT 1").first?.decode(Int.self) == 1)
            // A call waiting for the pool's one connection ends when its task is cancelled, not when the
            // connection is free.
            let waiter = Task { try await database.outboxStats(now: 0) }
            try await Task.sleep(for: .milliseconds(200))
            waiter.cancel()
            let result = await waiter.result
            if case .failure(let error) = result {
                #expect(error is CancellationError, "\(error)")
            } else {
                Issue.record("the cancelled call went on")
            }
            #expect(try Self.sleeping(application) == 1)
            try PostgresCluster.shared().sql(
                "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = '\(application)' AND query LIKE '%pg_sleep%'",
                database: "postgres")
            _ = await holder.result
        }
    }

    @Test func aTerminatedConnectionIsReplacedAndTheUnitRunsAgain() async throws {
        try await Self.withDatabase(connections: 1) { database, application in
            let pool = try await database.pool()
            let unit = Task { try await pool.rows("SELECT 7 FROM pg_sleep(1)").first?.decode(Int.self) }
            try await Task.sleep(for: .milliseconds(300))
            try PostgresCluster.shared().sql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '\(application)'", database: "postgres")
            #expect(try await unit.value == 7)
            #expect(try await database.outboxStats(now: 0).total == 0)
        }
    }

    /// A server restart closes every connection: the units that held one and those waiting for one
    /// all run again on new connections of the same pool once the server is back (no client is
    /// replaced), the lease renewer's too, and `close()` then closes everything.
    @Test func aServerRestartIsRiddenOutByTheSamePool() async throws {
        let cluster = try PostgresCluster()  // its own: the restart must not disturb other tests
        let application = "digest_\(UUID().uuidString.prefix(8).lowercased())"
        let url = try cluster.makeDatabase("restart") + "&application_name=\(application)"
        let database = try DigestPostgres.PostgresDatabase.postgres(url: url, connections: 2)
        try await database.withRunning {
            _ = try await database.migrate()
            let pool = try await database.pool()
            let leases = PostgresPool(clients: database.clients, lane: .leases, reconnectWindow: .seconds(60))
            func sleeping() throws -> Int {
                Int(try cluster.sql(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(application)' AND query LIKE '%pg_sleep%' AND state = 'active'",
                    database: "postgres")) ?? -1
            }
            // More units than the pool holds: two hold its connections, the rest wait in its queue.
            let units = Task {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for unit in 1...8 { group.addTask { try await pool.rows("SELECT \(unit) FROM pg_sleep(2)").first?.decode(Int.self) ?? 0 } }
                    group.addTask { try await leases.rows("SELECT 100 FROM pg_sleep(3)").first?.decode(Int.self) ?? 0 }
                    return try await group.reduce(0, +)
                }
            }
            let deadline = ContinuousClock.now + .seconds(60)
            while try sleeping() < 2 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(25)) }
            #expect(try sleeping() >= 2)
            // From a thread of its own: the restart blocks until the server is up again.
            let restart = Watcher.start(when: { true }) { try cluster.restart(downFor: 1.5) }
            for _ in 0..<2400 where !restart.fired { try await Task.sleep(for: .milliseconds(25)) }
            #expect(restart.fired && restart.error == nil, "\(restart.error ?? "the restart did not finish")")
            #expect(try await units.value == (1...8).reduce(0, +) + 100)
            #expect(try await leases.rows("SELECT 1").first?.decode(Int.self) == 1)
            await database.close()
            func backends() throws -> Int {
                Int(try cluster.sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(application)'", database: "postgres")) ?? -1
            }
            var left = try backends()
            for _ in 0..<200 where left > 0 {
                try await Task.sleep(for: .milliseconds(50))
                left = try backends()
            }
            #expect(left == 0)
        }
    }
}
