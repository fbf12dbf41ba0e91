import AsyncHTTPClient
import DigestSQLite
@testable import DigestSender
import DigestStore
import DigestTesting
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// A sender in the test process against a fake server, with time shrunk so retries take milliseconds.
enum SenderHarness {
    /// A sender's clock (Unix seconds) that starts at `start` and moves with time: a test sets the
    /// sender at an instant, and a retry it did not plan for (a loaded machine's slow answer) still
    /// comes due instead of keeping a draining sender waiting for ever.
    static func clock(from start: Int64) -> @Sendable () -> Int64 {
        let began = ContinuousClock.now
        return { start + (ContinuousClock.now - began).components.seconds }
    }

    static func account(_ server: FakeFCMServer, in dir: TemporaryDirectory) throws -> ServiceAccount {
        let path = dir.path("service-account.json")
        try server.writeServiceAccount(to: path)
        return try ServiceAccount(contentsOf: path)
    }

    /// The clients a sender posts through.
    enum Transport {
        /// One client on the shared event loops, 16 HTTP/1.1 connections at most.
        case test
        /// As `digest send` makes them with its defaults: `connections` clients (one per 100 of the
        /// default concurrency) on one event loop, each with its share of the concurrency.
        case digestSend(connections: Int = (PushSender<SQLiteDatabase>.Configuration().concurrency + 99) / 100)
    }

    static func withSender<T>(
        db: String, server: FakeFCMServer, dir: TemporaryDirectory, trusting caFile: String? = nil, transport: Transport = .test,
        validateOnly: Bool = false, configure: (inout PushSender<SQLiteDatabase>.Configuration) -> Void = { _ in },
        _ body: (PushSender<SQLiteDatabase>, AccessTokenProvider) async throws -> T
    ) async throws -> T {
        try await withSender(
            database: SQLiteDatabase.sqlite(path: db), server: server, dir: dir, trusting: caFile, transport: transport, validateOnly: validateOnly,
            configure: configure, body)
    }

    /// As above, on any store.
    static func withSender<Database: DigestDatabase, T>(
        database: Database, server: FakeFCMServer, dir: TemporaryDirectory, trusting caFile: String? = nil, transport: Transport = .test,
        validateOnly: Bool = false, configure: (inout PushSender<Database>.Configuration) -> Void = { _ in },
        _ body: (PushSender<Database>, AccessTokenProvider) async throws -> T
    ) async throws -> T {
        let account = try account(server, in: dir)
        let client: HTTPClient
        var connections: [HTTPClient] = []
        var loops: MultiThreadedEventLoopGroup?
        switch transport {
        case .test:
            var clientConfiguration = HTTPClient.Configuration()
            clientConfiguration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
            if let caFile {
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.additionalTrustRoots = [.file(caFile)]
                clientConfiguration.tlsConfiguration = tls
            }
            client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        case .digestSend(let count):
            let concurrency = PushSender<Database>.Configuration().concurrency
            let clientConfiguration = HTTPClient.Configuration.pushSender(concurrency: (concurrency + count - 1) / count, caFile: caFile)
            let group = MultiThreadedEventLoopGroup(numberOfThreads: HTTPClient.Configuration.pushSenderEventLoops)
            loops = group
            client = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: clientConfiguration)
            connections = (1..<count).map { _ in HTTPClient(eventLoopGroupProvider: .shared(group), configuration: clientConfiguration) }
        }
        func shutDown() async {
            try? await client.shutdown()
            for connection in connections { try? await connection.shutdown() }
            try? await loops?.shutdownGracefully()
        }
        var fcm = FCMTransport.Configuration()
        fcm.endpoint = server.url
        fcm.validateOnly = validateOnly
        var configuration = PushSender<Database>.Configuration()
        configuration.concurrency = 16
        configuration.ratePerMinute = 600_000  // FCM's default quota, as digest send paces
        configuration.drain = true
        configuration.retry.timeScale = 0.001
        configuration.pollInterval = .milliseconds(50)
        configuration.owner = "test-\(UUID().uuidString.prefix(8))"
        configuration.caFile = caFile
        if case .digestSend = transport { configuration.concurrency = PushSender<Database>.Configuration().concurrency }
        configure(&configuration)
        var logger = Logger(label: "test.sender")
        logger.logLevel = .warning
        do {
            let tokens = try AccessTokenProvider(account: account, client: client, logger: logger)
            let sender = PushSender(
                database: database, fcm: fcm, projectID: account.projectID, tokens: tokens, client: client, connections: connections,
                configuration: configuration, logger: logger)
            let result = try await body(sender, tokens)
            await shutDown()
            return result
        } catch {
            await shutDown()
            throw error
        }
    }
}

extension FakeFCMServer.Faults {
    /// The mix the HTTP/1.1 exactly-once tests deliver through: 20% 503 with Retry-After, 429 bursts,
    /// 2% dropped connections, 1% UNREGISTERED, answers after 20–40 ms.
    static var mixedFailures: FakeFCMServer.Faults {
        var faults = FakeFCMServer.Faults()
        faults.unavailableRate = 0.20
        faults.retryAfterSeconds = 1
        faults.quotaBurstEvery = 2
        faults.quotaBurstLength = 0.1
        faults.dropRate = 0.02
        faults.unregisteredRate = 0.01
        faults.minDelayMilliseconds = 20
        faults.maxDelayMilliseconds = 40
        return faults
    }
}
