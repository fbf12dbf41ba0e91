import DigestSQLite
import DigestServer
import DigestStore
import DigestTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Runs a preview server on a free loopback port for the length of a test.
enum LiveServer {
    /// Starts `server` on port 0, runs `body` with the port it got, then stops the server.
    static func with<T: Sendable>(
        _ server: PreviewServer<SQLiteDatabase>, _ body: @Sendable @escaping (Int) async throws -> T
    ) async throws -> T {
        try await withLoopbackApplication({ server.application(onServerRunning: $0) }, body)
    }

    /// GET `url`: the body and the status code.
    static func get(_ url: String) async throws -> (Data, Int) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
        return (data, (response as? HTTPURLResponse)?.statusCode ?? 0)
    }
}
