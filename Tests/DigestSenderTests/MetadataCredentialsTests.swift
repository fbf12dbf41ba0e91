import AsyncHTTPClient
@testable import DigestSender
import DigestSQLite
import DigestTesting
import Foundation
import Logging
import NIOCore
import Synchronization
import Testing

/// `--credentials metadata`: tokens from a fake GCE/GKE metadata server on loopback, through the
/// same client configuration `digest send` uses.
@Suite struct MetadataCredentialsTests {
    /// A provider over the metadata server at `host`, with `clock` (default: the real one).
    static func withProvider<T>(
        host: String, attempts: Int = 4, clock: (@Sendable () -> Int64)? = nil,
        _ body: (AccessTokenProvider, MetadataServerTokenSource) async throws -> T
    ) async throws -> T {
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .metadataServer())
        var configuration = AccessTokenProvider.Configuration()
        configuration.attempts = attempts
        configuration.retryPause = .milliseconds(1)
        if let clock { configuration.clock = clock }
        do {
            let source = try MetadataServerTokenSource(host: host, client: client)
            let tokens = AccessTokenProvider(source: source, configuration: configuration, logger: Logger(label: "test"))
            let result = try await body(tokens, source)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// A loopback port that refuses connections for as long as `body` runs: a socket bound to it
    /// and never listening holds it, so no server another test starts meanwhile can take it (a
    /// stopped server's port could be handed out again, and a connection to whatever took it would
    /// wait for an answer instead of being refused).
    static func withClosedPort<T>(_ body: (String) async throws -> T) async throws -> T {
        let bound = try #require(BoundLoopbackPort(), "no loopback port to bind")
        defer { withExtendedLifetime(bound) {} }  // the port stays taken until `body` returns
        return try await body("127.0.0.1:\(bound.port)")
    }

    @Test func tokensAreFetchedCachedAndRefreshedBeforeExpiry() async throws {
        let issued = Mutex<[String: Int64]>([:])
        let server = try await FakeMetadataServer.start(tokenLifetime: 3599) { token, lifetime in issued.withLock { $0[token] = lifetime } }
        let offset = Atomic<Int64>(0)
        try await Self.withProvider(host: server.host, clock: { Int64(Date().timeIntervalSince1970) + offset.load(ordering: .relaxed) }) { tokens, source in
            #expect(tokens.status().secondsLeft == nil && tokens.status().lastFailure == nil)
            let first = try await tokens.token()
            #expect(issued.withLock { $0[first] } == 3599)
            #expect(try await tokens.token() == first)
            #expect(tokens.currentToken() == first)
            #expect(tokens.status().secondsLeft.map { (3590...3599).contains($0) } == true)
            #expect(server.stats.tokenRequests == 1)
            offset.store(3599 - 300 - 60, ordering: .relaxed)  // a minute before the refresh point
            #expect(try await tokens.token() == first)
            offset.store(3599 - 300 + 1, ordering: .relaxed)  // past it: refreshed while still valid
            #expect(tokens.currentToken() == nil)
            let second = try await tokens.token()
            #expect(second != first && issued.withLock { $0[second] } == 3599)
            #expect(await tokens.fetches == 2)
            #expect(server.stats.tokenRequests == 2 && server.stats.unflavored == 0)
            #expect(tokens.principal == "the default service account of the metadata server at \(server.host)")
            #expect(try await source.projectID(timeout: .seconds(5)) == "digest-test")
        }
        try await server.shutdown()
    }

    @Test func aFailingServerIsRetriedThenReportedUnavailable() async throws {
        let server = try await FakeMetadataServer.start()
        server.scriptTokenAnswers([.status(503), .drop, .status(429)])
        try await Self.withProvider(host: server.host) { tokens, _ in
            _ = try await tokens.token()
            #expect(tokens.sourceRequests == 4 && server.stats.tokensIssued == 1)
        }
        server.scriptTokenAnswers([], then: .status(500))
        try await Self.withProvider(host: server.host, attempts: 3) { tokens, _ in
            await #expect {
                _ = try await tokens.token()
            } throws: { error in
                (error as? SenderError)?.code == .unavailable && "\(error)".contains("HTTP 500")
            }
            #expect(tokens.sourceRequests == 3)
            #expect(tokens.status().secondsLeft == nil && tokens.status().lastFailure?.contains("HTTP 500") == true)
        }
        try await server.shutdown()
    }

    @Test func aFailedEarlyRefreshKeepsTheTokenUntilItExpires() async throws {
        let server = try await FakeMetadataServer.start(tokenLifetime: 3599)
        let offset = Atomic<Int64>(0)
        try await Self.withProvider(host: server.host, attempts: 2, clock: { Int64(Date().timeIntervalSince1970) + offset.load(ordering: .relaxed) }) { tokens, _ in
            let first = try await tokens.token()
            server.scriptTokenAnswers([], then: .status(503))
            offset.store(3599 - 100, ordering: .relaxed)  // due for a refresh, 100 s left
            #expect(try await tokens.token() == first)
            #expect(tokens.status().isUsable && tokens.status().lastFailure != nil)
            offset.store(3599, ordering: .relaxed)  // expired
            #expect(!tokens.status().isUsable)
            await #expect { _ = try await tokens.token() } throws: { ($0 as? SenderError)?.code == .unavailable }
            server.scriptTokenAnswers([])
            #expect(try await tokens.token() != first)
            #expect(tokens.status().isUsable && tokens.status().lastFailure == nil)
        }
        try await server.shutdown()
    }

    /// Mid-run, a refresh that keeps failing past the token's expiry stops the sender, its leases
    /// released: as unavailable while the server fails (exit 75: a restart may work), as refused
    /// when it refuses (exit 78).
    @Test(arguments: [
        (FakeMetadataServer.TokenAnswer.status(503), SenderError.Code.unavailable, "HTTP 503"),
        (.status(403), .authentication, "refused an access token (HTTP 403"),
    ])
    func aRefreshFailingWhenTheTokenExpiresStopsTheSender(answer: FakeMetadataServer.TokenAnswer, code: SenderError.Code, message: String) async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("outbox.sqlite")
        // 2,000 messages at 16 a time and 100 ms each: 12.5 s of sending, against the token expiring
        // on the sender's own clock as soon as the server has seen a request (the expiry does not
        // wait for this test's task, which a loaded machine may not run for seconds).
        try OutboxFixture.fill(path: db, count: 2000)
        var faults = FakeFCMServer.Faults()
        faults.minDelayMilliseconds = 100
        faults.maxDelayMilliseconds = 100
        let fcm = try await FakeFCMServer.start(faults: faults)
        let metadata = try await FakeMetadataServer.start(projectID: fcm.projectID) { fcm.registerAccessToken($0, lifetime: $1) }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let clock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) + (fcm.stats.requests > 0 ? 4000 : 0) }
        try await Self.withProvider(host: metadata.host, clock: clock) { tokens, _ in
            // The first token comes; every later one fails.
            _ = try await tokens.token()
            metadata.scriptTokenAnswers([], then: answer)
            var endpoint = FCMTransport.Configuration()
            endpoint.endpoint = fcm.url
            var configuration = PushSender<SQLiteDatabase>.Configuration()
            configuration.concurrency = 16
            configuration.ratePerMinute = 600_000
            configuration.drain = true
            configuration.retry.timeScale = 0.001
            configuration.pollInterval = .milliseconds(50)
            let sender = PushSender(
                database: SQLiteDatabase.sqlite(path: db), fcm: endpoint, projectID: fcm.projectID, tokens: tokens, client: client,
                configuration: configuration, logger: Logger(label: "test"))
            await #expect {
                _ = try await sender.send()
            } throws: { error in
                (error as? SenderError)?.code == code && "\(error)".hasPrefix("no access token (") && "\(error)".contains(message)
            }
        }
        let states = try OutboxFixture.states(path: db)
        #expect(states["leased"] == nil && states["ready", default: 0] > 0 && states["sent", default: 0] == fcm.stats.delivered, "\(states)")
        #expect(fcm.stats.duplicates == 0)
        try await client.shutdown()
        try await fcm.shutdown()
        try await metadata.shutdown()
    }

    @Test(arguments: [
        (FakeMetadataServer.TokenAnswer.status(404), "no default service account"),
        (.status(403), "refused an access token (HTTP 403"),
        (.impostor, "is not a Google metadata server"),
    ])
    func refusalsAreFinalAtTheFirstAnswer(answer: FakeMetadataServer.TokenAnswer, message: String) async throws {
        let server = try await FakeMetadataServer.start()
        server.scriptTokenAnswers([], then: answer)
        try await Self.withProvider(host: server.host) { tokens, _ in
            await #expect {
                _ = try await tokens.token()
            } throws: { error in
                (error as? SenderError)?.code == .credentials && "\(error)".contains(message)
            }
            #expect(tokens.sourceRequests == 1 && server.stats.tokenRequests == 1)
        }
        try await server.shutdown()
    }

    @Test func aMachineWithoutAMetadataServerFailsAtTheFirstTry() async throws {
        try await Self.withClosedPort { host in
            try await Self.withProvider(host: host) { tokens, source in
                await #expect {
                    _ = try await tokens.token()
                } throws: { error in
                    (error as? SenderError)?.code == .credentials && "\(error)".contains("no metadata server answers at \(host)")
                }
                #expect(tokens.sourceRequests == 1)
                await #expect { _ = try await source.projectID(timeout: .seconds(5)) } throws: { ($0 as? SenderError)?.code == .credentials }
            }
        }
    }

    @Test(arguments: ["", "http://metadata.google.internal", "host/path", "a b", "user@host"])
    func aHostWithASchemeOrPathIsRefused(host: String) throws {
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .metadataServer())
        defer { try? client.syncShutdown() }
        #expect { _ = try MetadataServerTokenSource(host: host, client: client) } throws: { ($0 as? SenderError)?.code == .configuration }
    }

    @Test func theHostComesFromGCEMetadataHost() {
        #expect(MetadataServerTokenSource.host(environment: [:]) == "metadata.google.internal")
        #expect(MetadataServerTokenSource.host(environment: ["GCE_METADATA_HOST": ""]) == "metadata.google.internal")
        #expect(MetadataServerTokenSource.host(environment: ["GCE_METADATA_HOST": "127.0.0.1:8080"]) == "127.0.0.1:8080")
    }
}
