import DigestSQLite
import DigestServer
import DigestStore
import Foundation
import Hummingbird
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Runs a preview server on a free loopback port for the length of a test.
enum LiveServer {
    struct Timeout: Error {}

    /// Starts `server` on port 0, runs `body` with the port it got, then stops the server.
    static func with<T: Sendable>(
        _ server: PreviewServer<SQLiteDatabase>, _ body: @Sendable @escaping (Int) async throws -> T
    ) async throws -> T {
        try await with(application: { server.application(onServerRunning: $0) }, body)
    }

    /// Starts the application `make` builds (listening on port 0, calling back with its port), runs
    /// `body` with that port, then stops it.
    static func with<App: ApplicationProtocol, T: Sendable>(
        application make: (@escaping @Sendable (Int) async -> Void) -> App, _ body: @Sendable @escaping (Int) async throws -> T
    ) async throws -> T {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = make { port in continuation.yield(port) }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { continuation.finish() }
                try await app.run()
            }
            group.addTask {
                // No port within 30 s: end the wait below.
                try? await Task.sleep(for: .seconds(30))
                continuation.finish()
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else {
                group.cancelAll()
                throw Timeout()
            }
            let result: T
            do {
                result = try await body(port)
            } catch {
                group.cancelAll()
                throw error
            }
            group.cancelAll()
            while let _ = try? await group.next() {}
            return result
        }
    }

    /// GET `url`: the body and the status code.
    static func get(_ url: String) async throws -> (Data, Int) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
        return (data, (response as? HTTPURLResponse)?.statusCode ?? 0)
    }
}
