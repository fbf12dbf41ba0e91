import NIOPosix
import PostgresNIO

extension PostgresClients {
    /// Connects directly, reads the schema version and closes the connection. A connection that cannot
    /// be made is retried with backoff for up to 2 s (the server may be starting); one the server
    /// refused (a wrong password, no such database) is not.
    func firstConnection() async throws -> Int? {
        let configuration = try location.connectionConfiguration()
        let window = Duration.seconds(2)
        let started = ContinuousClock.now
        var delay = Duration.milliseconds(100)
        while true {
            do {
                let connection = try await PostgresConnection.connect(
                    on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: 0, logger: PostgresConnection.quiet)
                let version: Int?
                do {
                    version = try await PostgresSchema.version(connection)
                } catch {
                    try? await connection.close()
                    throw error
                }
                try? await connection.close()
                return version
            } catch {
                if error is CancellationError { throw error }
                guard PostgresPool.isConnectionLoss(error), started.duration(to: .now) + delay < window else {
                    throw PostgresPool.describe(error, location: location, window: window)
                }
                try await Task.sleep(for: delay * Double.random(in: 0.5...1.5))
                delay = min(delay * 2, .seconds(5))
            }
        }
    }
}
