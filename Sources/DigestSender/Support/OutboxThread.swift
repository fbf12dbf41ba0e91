import DigestStore
import Foundation

/// Owns an ``OutboxConsumer`` on a dedicated thread: SQLite calls block, so they stay off the few
/// threads of the concurrency pool that drive HTTP.
final class OutboxThread<Consumer: OutboxConsumer>: Sendable {
    private let jobs = JobQueue()

    /// Starts the thread; `makeConsumer` runs on it, so the consumer never leaves it.
    init(name: String, makeConsumer: @escaping @Sendable () throws -> Consumer) {
        let jobs = self.jobs
        let thread = Thread {
            let consumer = Result { try makeConsumer() }
            while let job = jobs.take() { job(consumer) }
        }
        thread.name = name
        thread.start()
    }

    /// Runs `body` with the consumer on the thread.
    func run<T: Sendable>(_ body: @escaping @Sendable (Consumer) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            jobs.put { consumer in
                continuation.resume(with: Result { try body(consumer.get()) })
            }
        }
    }

    /// Lets the thread finish its queued jobs and exit.
    func shutdown() { jobs.close() }

    /// The thread's jobs. `@unchecked Sendable`: `jobs` and `closed` are only touched with `condition`
    /// locked, and the consumer passed to each job is only touched on the thread.
    private final class JobQueue: @unchecked Sendable {
        typealias Job = (Result<Consumer, any Error>) -> Void
        private let condition = NSCondition()
        private var jobs: [Job] = []
        private var closed = false

        func put(_ job: @escaping Job) {
            condition.lock()
            jobs.append(job)
            condition.signal()
            condition.unlock()
        }

        func take() -> Job? {
            condition.lock()
            defer { condition.unlock() }
            while jobs.isEmpty && !closed { condition.wait() }
            return jobs.isEmpty ? nil : jobs.removeFirst()
        }

        func close() {
            condition.lock()
            closed = true
            condition.signal()
            condition.unlock()
        }
    }
}
