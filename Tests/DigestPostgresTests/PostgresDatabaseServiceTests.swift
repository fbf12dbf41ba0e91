import DigestStore
import DigestTesting
import Foundation
import Logging
import ServiceLifecycle
import Testing

@testable import DigestPostgres

/// A PostgresDatabase runs as a `Service` of its owner: calls wait for the run (not for ever), the
/// run ends when cancelled, at a graceful shutdown or at `close()`, closing the database and its
/// connections, and runs once.
@Suite struct PostgresDatabaseServiceTests {
    /// A database on the shared cluster whose connections carry an application name of their own.
    static func database() throws -> (DigestPostgres.PostgresDatabase, String) {
        let application = "digest_\(UUID().uuidString.prefix(8).lowercased())"
        let url = try PostgresCluster.shared().makeDatabase("service") + "&application_name=\(application)"
        return (try DigestPostgres.PostgresDatabase.postgres(url: url), application)
    }

    /// Waits (up to 10 s) until no backend of `application` is left; returns how many are.
    static func backendsLeft(_ application: String) async throws -> Int {
        func count() throws -> Int {
            Int(try PostgresCluster.shared().sql(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(application)'", database: "postgres")) ?? -1
        }
        var left = try count()
        for _ in 0..<200 where left > 0 {
            try await Task.sleep(for: .milliseconds(50))
            left = try count()
        }
        return left
    }

    @Test func aCallOnADatabaseNothingRunsFailsSayingSo() async throws {
        let (database, _) = try Self.database()
        let started = ContinuousClock.now
        do {
            _ = try await database.migrate()
            Issue.record("a database nothing runs answered")
        } catch let error as PostgresStoreError {
            #expect(error.description.contains("the database is not running"), "\(error)")
            #expect(error.kind == .configuration)
        }
        #expect(started.duration(to: .now) >= PostgresClients.startWait)
        await database.close()
    }

    @Test func aCallMadeBeforeTheRunWaitsForIt() async throws {
        let (database, _) = try Self.database()
        try await withThrowingTaskGroup(of: Void.self) { group in
            let call = Task { try await database.migrate() }
            try await Task.sleep(for: .milliseconds(300))
            try database.clients.start()
            group.addTask { await database.clients.runStarted() }
            #expect(try await call.value.from == 0)
            await database.close()
            try await group.waitForAll()
        }
    }

    @Test func cancellingTheRunClosesTheDatabaseAndItsConnections() async throws {
        let (database, application) = try Self.database()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await database.run() }
            _ = try await database.migrate()
            #expect(try await database.outboxStats(now: 0).total == 0)
            group.cancelAll()
            try await group.waitForAll()
        }
        #expect(try await Self.backendsLeft(application) == 0)
        await #expect(throws: PostgresStoreError.self) { _ = try await database.outboxStats(now: 0) }
        // A client runs once: so does the database.
        await #expect(throws: PostgresStoreError.self) { try await database.run() }
        await database.close()
        await database.close()
    }

    @Test func closeEndsTheRun() async throws {
        let (database, application) = try Self.database()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await database.run() }
            _ = try await database.migrate()
            await database.close()
            try await group.waitForAll()
        }
        #expect(try await Self.backendsLeft(application) == 0)
        await #expect(throws: PostgresStoreError.self) { try await database.run() }
    }

    @Test func aGracefulShutdownOfItsServiceGroupEndsTheRun() async throws {
        let (database, application) = try Self.database()
        let group = ServiceGroup(configuration: .init(services: [database], logger: Logger(label: "digest.test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            // Once the group runs it (a busy machine may start it later than the 5 s a call waits).
            let deadline = ContinuousClock.now + .seconds(120)
            while !database.clients.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            _ = try await database.migrate()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(try await Self.backendsLeft(application) == 0)
        await #expect(throws: PostgresStoreError.self) { _ = try await database.outboxStats(now: 0) }
    }

    @Test func withRunningRunsTheBodyThenClosesTheDatabase() async throws {
        let (database, application) = try Self.database()
        let total = try await database.withRunning {
            _ = try await database.migrate()
            await #expect(throws: PostgresStoreError.self) { try await database.run() }
            return try await database.outboxStats(now: 0).total
        }
        #expect(total == 0)
        #expect(try await Self.backendsLeft(application) == 0)
        await #expect(throws: PostgresStoreError.self) { _ = try await database.outboxStats(now: 0) }
    }
}
