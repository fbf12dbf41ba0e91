package import NIOCore

/// A task executor that runs jobs on one NIO event loop.
///
/// - The sender's message tasks prefer one (`addTask(executorPreference:)`), and pin their HTTP
///   requests to the same loop, so a request's start, its answer and the task that waits for it run on
///   one thread: no hop to the concurrency pool and back, no wake-up of another thread per message.
///   Its driver loop and store tasks, which start those tasks and take their outcomes, run on one too.
/// - The loopback server of DigestDemo handles its connections on their channel's loop, so it answers even
///   while blocking work holds every thread of the concurrency pool (a busy test process).
///
/// The loop must outlive every task that prefers it.
package final class EventLoopExecutor: TaskExecutor {
    package let eventLoop: any EventLoop

    package init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
