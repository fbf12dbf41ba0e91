import AsyncHTTPClient
@testable import DigestSender
import DigestTesting
import Foundation
import Logging
import NIOCore
import Testing

/// Every time the sender writes or signs comes from its injected clock, not from the machine's.
@Suite struct SenderClockTests {
    /// Runs a sender on `clock` until the outbox's one message has been tried once and is ready again.
    static func tryOnce(db: String, server: FakeFCMServer, dir: TemporaryDirectory, clock: @escaping @Sendable () -> Int64) async throws {
        try await SenderHarness.withSender(db: db, server: server, dir: dir) { configuration in
            configuration.clock = clock
            configuration.retry.timeScale = 1
            configuration.drain = false
        } _: { sender, _ in
            let sending = Task { try await sender.send() }
            try await SendBinaryTests.until(.seconds(120)) {
                try OutboxFixture.scalar(path: db, "SELECT state || ' ' || attempts FROM digest_outbox") == "ready 1"
            }
            sending.cancel()  // a stop, as SIGTERM's graceful shutdown is
            _ = try await sending.value
        }
    }

    /// A 503 with `Retry-After: 120` at a fixed instant T: the message is due again at T + 120 by the
    /// sender's clock (with the machine's, it would be due two minutes from the real now).
    @Test func aRetryIsDueByTheSendersClock() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 1)
        var faults = FakeFCMServer.Faults()
        faults.unavailableRate = 1
        faults.retryAfterSeconds = 120
        let server = try await FakeFCMServer.start(faults: faults)
        let instant: Int64 = 1_795_000_000  // 2026-11-18
        try await Self.tryOnce(db: db, server: server, dir: dir, clock: { instant })
        #expect(try OutboxFixture.scalar(path: db, "SELECT available_at FROM digest_outbox") == String(instant + 120))
        #expect(try OutboxFixture.scalar(path: db, "SELECT last_error FROM digest_outbox")?.hasPrefix("UNAVAILABLE: ") == true)
        try await server.shutdown()
    }

    /// A 503 whose `Retry-After` is an HTTP date two minutes after the server's now, to a sender whose
    /// clock is an hour behind: the delay is read against the sender's clock, so the message is due
    /// at that date (read against the machine's clock, it would be due two minutes after the
    /// sender's now, an hour early).
    @Test func aRetryAfterDateIsReadAgainstTheSendersClock() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: 1)
        var faults = FakeFCMServer.Faults()
        faults.unavailableRate = 1
        faults.retryAfterSeconds = 120
        faults.retryAfterAsDate = true
        let server = try await FakeFCMServer.start(faults: faults)
        let before = Int64(Date().timeIntervalSince1970)
        try await Self.tryOnce(db: db, server: server, dir: dir, clock: { before - 3_600 })
        let after = Int64(Date().timeIntervalSince1970)
        let due = Int64(try OutboxFixture.scalar(path: db, "SELECT available_at FROM digest_outbox") ?? "") ?? 0
        #expect((before + 120...after + 120).contains(due), "due \(due - before) s after the start")
        try await server.shutdown()
    }

    /// The service account's assertion is stamped by the source's clock: one two hours behind is
    /// refused by the token endpoint (which checks the issue time against its own), the machine's is
    /// not.
    @Test func theAssertionIsStampedByTheSourcesClock() async throws {
        let dir = try TemporaryDirectory()
        let server = try await FakeFCMServer.start()
        let account = try SenderHarness.account(server, in: dir)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let logger = Logger(label: "test")
        let behind = try ServiceAccountTokenSource(account: account, client: client) { Int64(Date().timeIntervalSince1970) - 7_200 }
        await #expect {
            _ = try await behind.fetchToken(timeout: .seconds(5), logger: logger)
        } throws: { error in
            (error as? SenderError)?.code == .authentication && "\(error)".contains("short-lived")
        }
        let now = try ServiceAccountTokenSource(account: account, client: client)
        #expect(try await now.fetchToken(timeout: .seconds(5), logger: logger).value.hasPrefix("ya29."))
        #expect(server.stats.accessTokens == 1)
        try await client.shutdown()
        try await server.shutdown()
    }
}
