import DigestTesting
import Foundation
import PostgresNIO
import Synchronization
import Testing

@testable import DigestPostgres

/// What postgres-nio 1.33 does that ``PostgresLease`` and the pool's settings work around, on
/// postgres-nio alone (docs/005, "What digest works around in postgres-nio 1.33"). Each test states
/// what happens today; one that fails after an upgrade says that a workaround may go.
@Suite struct PostgresNIOReproductionTests {
    /// A client of one connection to a new database, whose connections carry an application name
    /// of their own.
    static func client(minimumConnections: Int) throws -> (PostgresClient, String) {
        let application = "digest_\(UUID().uuidString.prefix(8).lowercased())"
        let url = try PostgresCluster.shared().makeDatabase("nio") + "&application_name=\(application)"
        var configuration = try PostgresLocation(url: url).clientConfiguration(connections: 1)
        configuration.options.minimumConnections = minimumConnections
        return (PostgresClient(configuration: configuration), application)
    }

    static func backends(_ application: String) throws -> Int {
        Int(try PostgresCluster.shared().sql(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(application)'", database: "postgres")) ?? -1
    }

    /// W1: a request queued behind the pool's only connection, which the server then ends, gets a
    /// new connection only when the pool keeps `minimumConnections` (`ConnectionGroup.connectionClosed`
    /// makes one only below that number); otherwise it waits until another request comes.
    @Test(arguments: [0, 1])
    func aRequestQueuedBehindAConnectionThatClosesIsServedOnlyAboveTheMinimum(minimumConnections: Int) async throws {
        let (client, application) = try Self.client(minimumConnections: minimumConnections)
        let served = try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            // The pool's one connection, leased and idle (no statement on it), until the server has
            // ended it (then the holder is cancelled and hands the closed connection back).
            let holder = Task { try await client.withConnection { _ in try await Task.sleep(for: .seconds(600)) } }
            // Generous: a full run on 2 busy cores was seen to hold tasks 48 s.
            let deadline = ContinuousClock.now + .seconds(120)
            while try Self.backends(application) == 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(25)) }
            let asking = Mutex(false)
            let queued = Task {
                // The request is queued without a suspension after this.
                asking.withLock { $0 = true }
                return try await client.withConnection { try await $0.rows("SELECT 1").count }
            }
            while !asking.withLock({ $0 }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            try await Task.sleep(for: .milliseconds(300))
            // The holder's backend (the only one: the pool holds one connection) ends.
            let pid = try PostgresCluster.shared().sql(
                "SELECT pid FROM pg_stat_activity WHERE application_name = '\(application)'", database: "postgres")
            try #require(!pid.isEmpty && !pid.contains("\n"), "the holder's backend: \(pid)")
            try PostgresCluster.shared().sql("SELECT pg_terminate_backend(\(pid))", database: "postgres")
            while try PostgresCluster.shared().sql("SELECT count(*) FROM pg_stat_activity WHERE pid = \(pid)", database: "postgres") != "0",
                ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(25))
            }
            try await Task.sleep(for: .milliseconds(500))
            holder.cancel()
            _ = await holder.result
            // Served within 15 s, or not.
            let answered = Task {
                try? await Task.sleep(for: .seconds(15))
                queued.cancel()
            }
            let result = await queued.result
            answered.cancel()
            if case .success(let count) = result { return count == 1 }
            return false
        }
        // Served with the minimum; without it, a pass here means postgres-nio serves it now.
        #expect(served == (minimumConnections > 0))
    }

    /// W2: a query on a connection that has closed never answers, neither with rows nor with an
    /// error: `PostgresConnection` writes it with `channel.write(…, promise: nil)`, and the closed
    /// channel's refusal reaches no one. It should fail at once (`PSQLError.clientClosedConnection`).
    @Test func aQueryOnAClosedConnectionNeverAnswers() async throws {
        let url = try PostgresCluster.shared().makeDatabase("nio")
        let connection = try await PostgresConnection.connect(
            configuration: try PostgresLocation(url: url).connectionConfiguration(), id: 1, logger: PostgresConnection.quiet)
        try await connection.close()
        let answer = Mutex<String?>(nil)
        // Left behind if it never ends (it cannot be cancelled: an `EventLoopFuture` is awaited).
        Task {
            do {
                _ = try await connection.rows("SELECT 1")
                answer.withLock { $0 = "rows" }
            } catch {
                answer.withLock { $0 = "\(error)" }
            }
        }
        let deadline = ContinuousClock.now + .seconds(3)
        while answer.withLock({ $0 }) == nil && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(25)) }
        #expect(answer.withLock { $0 } == nil, "postgres-nio answers now: PostgresLease.closedGrace may go")
    }
}
