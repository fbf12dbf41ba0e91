import DigestTesting
import Foundation
import Testing

/// `digest send` on a PostgreSQL outbox: the chaos test (faults, a SIGKILLed sender, a
/// second one finishing), with senders leasing through `FOR UPDATE SKIP LOCKED`.
@Suite(.serialized) struct SendPostgresTests {
    func states(_ cluster: PostgresCluster, _ url: String) throws -> [String: Int] {
        var states: [String: Int] = [:]
        for line in try cluster.sql("SELECT state, count(*) FROM digest_outbox GROUP BY state", url: url).split(separator: "\n") {
            let parts = line.split(separator: "|")
            states[String(parts[0])] = Int(parts[1])
        }
        return states
    }

    @Test func chaosWithASigkilledSenderLosesNothingOnPostgreSQL() async throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.makeDatabase("send")
        #expect(try await DigestBinary.run(["migrate", "--db", url]).status == 0)
        let count = 9000
        let concurrency = 32
        try await OutboxFixture.fill(postgres: url, count: count)
        let dir = try TemporaryDirectory()
        let server = try await FakeFCMServer.start(faults: SendBinaryTests.chaosFaults())
        let credentials = dir.path("sa.json")
        try server.writeServiceAccount(to: credentials)
        let options = ["--drain", "--concurrency", String(concurrency), "--connections", String(concurrency), "--lease-seconds", "45", "--max-attempts", "40"]

        let first = try SendBinaryTests.SendProcess(
            db: url, credentials: credentials, endpoint: server.url, name: "first", dir: dir, extra: options)
        let killed = first.signal(SIGKILL) { server.stats.delivered >= count / 3 }
        try await SendBinaryTests.until(.seconds(240)) { killed.fired || !first.process.isRunning }
        #expect(killed.fired, "the first sender ended before the kill: \(first.output)")
        _ = try await first.wait(timeout: .seconds(10))
        let leasedAtKill = Int(try cluster.sql("SELECT count(*) FROM digest_outbox WHERE lease_owner = '\(first.owner)'", url: url)) ?? 0

        let second = try SendBinaryTests.SendProcess(
            db: url, credentials: credentials, endpoint: server.url, name: "second", dir: dir, extra: options)
        #expect(try await second.wait(timeout: .seconds(600)) == 0, "\(second.output)")

        let states = try states(cluster, url)
        #expect(states["sent", default: 0] + states["dead", default: 0] == count, "states: \(states)")
        #expect(states["sent"] == server.stats.delivered)
        #expect(try cluster.sql("SELECT count(*) FROM digest_outbox WHERE state = 'dead' AND coalesce(last_error, '') = ''", url: url) == "0")
        #expect(try cluster.sql("SELECT count(*) FROM digest_outbox WHERE state = 'sent' AND fcm_name IS NULL", url: url) == "0")
        // Unregistered tokens are remembered for the next run.
        let unregistered = try cluster.sql("SELECT count(*) FROM digest_outbox WHERE last_error LIKE 'UNREGISTERED:%'", url: url)
        #expect(try cluster.sql("SELECT count(*) FROM digest_dead_tokens", url: url) == unregistered)
        #expect((Int(unregistered) ?? 0) > 0)
        let duplicates = SendBinaryTests.expectDuplicatesOnlyFromTheKill(server, leasedAtKill: leasedAtKill, concurrency: concurrency)
        print("chaos on PostgreSQL: delivered \(server.stats.delivered), duplicates \(duplicates), leased at kill \(leasedAtKill)")
        try await server.shutdown()
    }
}
