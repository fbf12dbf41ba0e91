import NIOCore

/// A task executor that runs jobs on one NIO event loop.
///
/// The sender's dispatch task prefers it (`withTaskExecutorPreference`, inherited by the request tasks
/// it starts), and pins its HTTP requests to the same loop, so a request's start, its answer and the
/// task that waits for it run on one thread: no hop to the concurrency pool and back, no wake-up of
/// another thread per message.
///
/// The loop must outlive every task that prefers it (the sender's client's loops do).
final class EventLoopExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
