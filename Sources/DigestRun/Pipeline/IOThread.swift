import DigestCore
import Foundation

/// A dedicated thread for blocking database calls, so they never occupy the concurrency pool's few
/// threads (two on a two-core machine) that compute digests.
final class IOThread: Sendable {
    private let queue = JobQueue<@Sendable () -> Void>()

    init(name: String) {
        let queue = self.queue
        let thread = Thread {
            while let job = queue.take() { job() }
        }
        thread.name = name
        thread.start()
    }

    /// Runs `body` on the thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = queue.put { continuation.resume(with: Result { try body() }) }
            if !accepted { continuation.resume(throwing: RunError("the database thread has stopped")) }
        }
    }

    /// Lets the thread finish its queued jobs and exit.
    func shutdown() { queue.close() }
}

/// A value used only on one ``IOThread``: every access happens inside that thread's jobs, one at a
/// time, which is why the unchecked conformance is safe.
final class ThreadConfined<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
