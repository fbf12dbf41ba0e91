package import Hummingbird

/// The application of ``withLoopbackApplication(_:_:)`` did not say it was listening in time, or
/// stopped before it did.
package struct ApplicationDidNotStart: Error, CustomStringConvertible {
    package var description: String { "the application did not start listening" }
}

/// Runs the Hummingbird application `make` builds for the length of `body`, then stops it. `make` is
/// given the callback the application calls once listening (its `onServerRunning`, with the port it
/// got): build it on port 0 of loopback, and `body` is given that port. Throws
/// ``ApplicationDidNotStart`` (or the application's own error) when no port comes within `timeout`.
///
/// ```swift
/// try await withLoopbackApplication({ server.application(onServerRunning: $0) }) { port in
///     // requests to http://127.0.0.1:\(port)
/// }
/// ```
package func withLoopbackApplication<App: ApplicationProtocol, T: Sendable>(
    _ make: (@escaping @Sendable (Int) async -> Void) -> App, timeout: Duration = .seconds(30),
    _ body: @Sendable @escaping (Int) async throws -> T
) async throws -> T {
    let (ports, continuation) = AsyncStream<Int>.makeStream()
    let app = make { port in continuation.yield(port) }
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            defer { continuation.finish() }
            try await app.run()
        }
        group.addTask {
            // No port in time: end the wait below.
            try? await Task.sleep(for: timeout)
            continuation.finish()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            group.cancelAll()
            try await group.waitForAll()  // the application's error, if it failed
            throw ApplicationDidNotStart()
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
