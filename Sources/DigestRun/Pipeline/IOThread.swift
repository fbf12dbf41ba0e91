import Foundation

/// A dedicated thread for blocking database calls, so they never occupy the concurrency pool's few
/// threads (two on a two-core machine) that compute digests.
final class IOThread: Sendable {
    private let queue = JobQueue()

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
            queue.put { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Lets the thread finish its queued jobs and exit.
    func shutdown() { queue.close() }
}

/// The jobs of an ``IOThread``. `@unchecked Sendable`: every access to `jobs` and `closed` happens
/// with `condition` locked.
private final class JobQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var head = 0
    private var closed = false

    func put(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// The next job, waiting for one; `nil` once closed and drained.
    func take() -> (@Sendable () -> Void)? {
        condition.lock()
        defer { condition.unlock() }
        while head == jobs.count && !closed { condition.wait() }
        guard head < jobs.count else { return nil }
        let job = jobs[head]
        head += 1
        if head == jobs.count {
            jobs.removeAll(keepingCapacity: true)
            head = 0
        }
        return job
    }

    func close() {
        condition.lock()
        closed = true
        condition.signal()
        condition.unlock()
    }
}

/// A value used only on one ``IOThread``: every access happens inside that thread's jobs, one at a
/// time, which is why the unchecked conformance is safe.
final class ThreadConfined<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
