import AsyncHTTPClient
import DigestSQLite
@testable import DigestSender
import DigestStore
import DigestTesting
import Foundation
import Logging
import NIOCore
import NIOSSL

/// A sender in the test process against a fake server, with time shrunk so retries take milliseconds.
enum SenderHarness {
    static func account(_ server: FakeFCMServer, in dir: TemporaryDirectory) throws -> ServiceAccount {
        let path = dir.path("service-account.json")
        try server.writeServiceAccount(to: path)
        return try ServiceAccount(contentsOf: path)
    }

    static func withSender<T>(
        db: String, server: FakeFCMServer, dir: TemporaryDirectory, trusting caFile: String? = nil,
        configure: (inout FCMSender<SQLiteDatabase>.Configuration) -> Void = { _ in },
        _ body: (FCMSender<SQLiteDatabase>, AccessTokenProvider) async throws -> T
    ) async throws -> T {
        try await withSender(database: SQLiteDatabase.sqlite(path: db), server: server, dir: dir, trusting: caFile, configure: configure, body)
    }

    /// As above, on any store.
    static func withSender<Database: DigestDatabase, T>(
        database: Database, server: FakeFCMServer, dir: TemporaryDirectory, trusting caFile: String? = nil,
        configure: (inout FCMSender<Database>.Configuration) -> Void = { _ in },
        _ body: (FCMSender<Database>, AccessTokenProvider) async throws -> T
    ) async throws -> T {
        let account = try account(server, in: dir)
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
        if let caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(caFile)]
            clientConfiguration.tlsConfiguration = tls
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        var configuration = FCMSender<Database>.Configuration()
        configuration.endpoint = server.url
        configuration.concurrency = 16
        configuration.drain = true
        configuration.retry.timeScale = 0.001
        configuration.pollInterval = .milliseconds(50)
        configuration.owner = "test-\(UUID().uuidString.prefix(8))"
        configuration.caFile = caFile
        configure(&configuration)
        var logger = Logger(label: "test.sender")
        logger.logLevel = .warning
        do {
            let tokens = try AccessTokenProvider(account: account, client: client, logger: logger)
            let sender = FCMSender(database: database, account: account, client: client, tokens: tokens,
                                   configuration: configuration, logger: logger)
            let result = try await body(sender, tokens)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}
