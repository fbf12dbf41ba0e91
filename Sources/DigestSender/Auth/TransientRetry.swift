package import Logging

/// Runs `body` until it succeeds, fails with an error that is not
/// ``SenderError/Code-swift.struct/unavailable``, or has been tried `attempts` times; pauses
/// `pause`, then twice that, and so on between tries. The last error is thrown as it is.
package func retryingTransientFailures<T>(
    attempts: Int, pause: Duration, logger: Logger, _ body: () async throws(SenderError) -> T
) async throws -> T {
    var pause = pause
    var attempt = 1
    while true {
        let failure: SenderError
        do {
            return try await body()
        } catch {
            failure = error
        }
        guard failure.code == .unavailable, attempt < attempts else { throw failure }
        logger.notice("credentials source unavailable; retrying", metadata: ["error": "\(failure)", "attempt": "\(attempt)"])
        try await Task.sleep(for: pause)
        pause *= 2
        attempt += 1
    }
}
