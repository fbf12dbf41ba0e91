import Foundation

/// A first-in, first-out queue of jobs for one dedicated thread: the run's database threads and the
/// previews' rendering threads each take their jobs from one.
///
/// `@unchecked Sendable`: every access to `jobs`, `head` and `closed` happens with `condition` locked.
package final class JobQueue<Job: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var head = 0
    private var closed = false

    package init() {}

    /// Queues a job; `false` once the queue is closed.
    @discardableResult
    package func put(_ job: Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    /// The next job, waiting for one; `nil` once the queue is closed and drained.
    package func take() -> Job? {
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

    /// Lets the thread finish the queued jobs, then stop.
    package func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}
