import AsyncHTTPClient
@_spi(Benchmarks) @testable import DigestSender
import DigestTesting
import NIOCore
import Testing

/// A request's deadline counts from when it is written, on both of the sender's paths: through
/// async-http-client (plain http, HTTP/1.1 servers) and on its own HTTP/2 connections. Waiting for a
/// connection to open or for a stream to free up does not count, so a request is never written with
/// only a sliver of its deadline left (delivered, then failed and sent again).
@Suite struct RequestDeadlineTests {
    static func url(_ server: FakeFCMServer) -> String { "\(server.url)/v1/projects/\(server.projectID)/messages:send" }

    /// Through the client: 16 requests at once on a client whose pool keeps one HTTP/1.1
    /// connection, each answered 200 ms after it arrives. The last waits about 3 s in the pool, then
    /// is answered 200 ms after it was written: within its 2 s deadline.
    @Test func throughTheClientWaitingForAConnectionDoesNotCount() async throws {
        let count = 16
        let server = try await FakeFCMServer.start(faults: SendBinaryTests.delayed(200...200))
        server.registerAccessToken("test-token")
        var configuration = HTTPClient.Configuration.pushSender(concurrency: 1)
        configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 1)
        configuration.timeout = .init(connect: .seconds(60))  // the pool's wait for a connection: not what this is about
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        // As many turns as requests: they queue in the client's pool, behind its one connection.
        let exchange = HTTP2Exchange(client: client, url: Self.url(server), http1Connections: count)
        let statuses: [Result<Int, any Error>] = await withTaskGroup(of: Result<Int, any Error>.self) { group in
            for i in 1...count {
                group.addTask {
                    let body = ByteBuffer(string: OutboxFixture.message(i))
                    do {
                        return .success(try await exchange.post(body, token: "test-token", on: client.eventLoopGroup.next(), timeout: .seconds(2)).status)
                    } catch {
                        return .failure(error)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.map { try? $0.get() } == Array(repeating: 200, count: count), "\(statuses)")
        #expect(server.stats.requests == count && server.stats.maxInFlight == 1, "\(server.stats)")
        try await client.shutdown()
        try await server.shutdown()
    }

    /// Through the client, a written request whose answer comes later than its deadline fails there.
    @Test func throughTheClientALateAnswerFailsAtItsDeadline() async throws {
        let server = try await FakeFCMServer.start(faults: SendBinaryTests.delayed(2_000...2_000))
        server.registerAccessToken("test-token")
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .pushSender(concurrency: 1))
        let exchange = HTTP2Exchange(client: client, url: Self.url(server))
        await #expect(throws: HTTPClientError.deadlineExceeded) {
            _ = try await exchange.post(ByteBuffer(string: OutboxFixture.message(1)), token: "test-token", on: client.eventLoopGroup.next(), timeout: .milliseconds(100))
        }
        try await SendBinaryTests.until(.seconds(10)) { server.stats.requests == 1 }  // it was written
        try await client.shutdown()
        try await server.shutdown()
    }

    /// On the sender's own HTTP/2 connection: a server allowing one stream at a time, answering in
    /// 50 ms, and 64 requests at once with an 8 s deadline. The last of them waits about 15 s for its
    /// stream, yet none fails: each is answered 50 ms after it was written, so none is sent twice.
    /// (The deadline leaves a written request 8 s: other suites load both cores meanwhile.)
    @Test func overHTTP2WaitingForAStreamDoesNotCount() async throws {
        let dir = try TemporaryDirectory()
        guard let tls = try TestCertificate.make(in: dir.url) else {
            print("skipped: no openssl program to make a test certificate")
            return
        }
        let count = 300
        let db = dir.path("outbox.sqlite")
        try OutboxFixture.fill(path: db, count: count)
        let server = try await FakeFCMServer.start(faults: SendBinaryTests.delayed(50...50), tls: tls, maxConcurrentStreams: 1)
        let summary = try await SenderHarness.withSender(db: db, server: server, dir: dir, trusting: tls.certificatePath) { configuration in
            configuration.concurrency = 64
            configuration.requestTimeout = .seconds(8)
        } _: { sender, _ in try await sender.send() }
        let stats = server.stats
        #expect(summary.sent == count && summary.retriedTotal == 0, "\(summary)")
        #expect(stats.requests == count && stats.deliveredMessages == count && stats.duplicateMessages == 0, "\(stats)")
        #expect(stats.http2Requests == count && stats.maxInFlight == 1, "\(stats)")
        try await server.shutdown()
    }
}
