import DigestTesting
import NIOHTTP2
import Testing

/// The fake APNs server's connections: one stream until the first success, then many; GOAWAY.
extension FakeAPNsServerTests {
    /// Before the first success an async-http-client connection carries one stream at a time (403s do
    /// not raise the limit).
    @Test func oneStreamAtATimeUntilTheFirstSuccess() async throws {
        var faults = FakeAPNsServer.Faults()
        faults.minDelayMilliseconds = 50
        faults.maxDelayMilliseconds = 50
        guard let client = try await Self.start(faults: faults) else { return }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<6 { group.addTask { try await client.send(authorization: .some(nil)).status } }
            for try await status in group { #expect(status == 403) }
        }
        let stats = client.server.stats
        #expect(stats.maxStreamsUsed == 1 && stats.refusedStreams == 0, "\(stats)")
        try await client.shutdown()
    }

    /// At the frame level: SETTINGS_MAX_CONCURRENT_STREAMS 1, streams beyond it refused, then a new
    /// SETTINGS with the server's limit after the first 200, and that many streams at once.
    @Test(.timeLimit(.minutes(1))) func advertisesOneStreamThenManyAfterTheFirstSuccess() async throws {
        var faults = FakeAPNsServer.Faults()
        faults.minDelayMilliseconds = 300
        faults.maxDelayMilliseconds = 300
        guard let client = try await Self.start(faults: faults) else { return }
        let jwt = try client.jwt()
        let connection = try await RawHTTP2Connection.connect(to: client.server)
        // Four at once. Written before the client read the server's first SETTINGS, the three beyond
        // the first are refused; when the client had read them (a slow start on a loaded machine), its
        // HTTP/2 handler holds the three back until the first is answered, which raises the limit.
        let firsts = try await connection.send(count: 4, authorization: jwt)
        let heldBack = firsts.allSatisfy { $0.status == 200 }
        if !heldBack {
            #expect(firsts.map(\.status) == [200, nil, nil, nil], "\(firsts)")
            #expect(firsts.dropFirst().allSatisfy { $0.reset == .refusedStream }, "\(firsts)")
        }
        try await connection.waitForSettings(count: 2)
        #expect(connection.maxConcurrentStreamsSeen == [1, 1000])
        let seconds = try await connection.send(count: 8, authorization: jwt)
        #expect(seconds.map(\.status) == Array(repeating: 200, count: 8), "\(seconds)")
        let stats = client.server.stats
        #expect(stats.refusedStreams == (heldBack ? 0 : 3) && stats.maxStreamsUsed == 8, "\(stats)")
        #expect(stats.answers == ["200": heldBack ? 12 : 9], "\(stats)")
        try await connection.close()
        try await client.shutdown()
    }

    @Test func goAwayAnswersItsStreamsAndTheClientReconnects() async throws {
        guard let client = try await Self.start() else { return }
        #expect(try await client.send().status == 200)
        client.server.goAway()
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await client.send().status == 200)
        let stats = client.server.stats
        #expect(stats.goAways == 1 && stats.connections == 2 && stats.maxConnections == 1, "\(stats)")
        try await client.shutdown()
    }
}
