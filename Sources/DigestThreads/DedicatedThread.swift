import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A thread of its own that owns one resource (a SQLite connection, a Pango renderer) and runs
/// synchronous jobs on it, one at a time, in the order they were given.
///
/// The resource is made on the thread, used only there and released there when the thread stops:
/// it never crosses threads, so it needs no locks and need not be `Sendable`. Callers stay async:
/// ``run(_:)`` suspends the calling task (it never blocks a thread of the concurrency pool) until the
/// job has run. This is the only type that makes and blocks threads outside NIO's event loops and
/// thread pools; everything that must call blocking C code on a thread of its own goes through it.
///
/// ```swift
/// let thread = try await DedicatedThread(opening: "digest-reader") { try SQLiteConnection(path: path) }
/// let count = try await thread.run { connection in try connection.count("users") }
/// await thread.shutdown()
/// ```
package final class DedicatedThread<Resource>: Sendable {
    /// A job receives the resource, or the error that making it threw.
    private typealias Job = @Sendable (Result<Resource, any Error>) -> Void

    private struct State: Sendable {
        var jobs: [Job?] = []
        var head = 0
        var closed = false
        var exited = false
        var exitWaiters: [CheckedContinuation<Void, Never>] = []

        mutating func pop() -> Job? {
            guard head < jobs.count else { return nil }
            let job = jobs[head]
            jobs[head] = nil
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            }
            return job
        }
    }

    /// Queued jobs and the lifecycle, shared with the thread (which must not keep the
    /// ``DedicatedThread`` alive); the semaphore counts queued jobs, plus one once closed.
    private final class Shared: Sendable {
        let state = Mutex(State())
        let wake = DispatchSemaphore(value: 0)
    }

    private let shared = Shared()
    package let name: String

    /// Starts the thread and makes the resource on it. A resource that cannot be made fails every
    /// job with the error `makeResource` threw.
    package init(name: String, makeResource: @escaping @Sendable () throws -> Resource) {
        self.name = name
        let thread = Thread { [shared] in
            Self.nameCurrentThread(name)
            var resource: Result<Resource, any Error>? = Result { try makeResource() }
            while true {
                shared.wake.wait()
                guard let job = shared.state.withLock({ $0.pop() }), let made = resource else { break }
                job(made)
            }
            // The resource is released here, on this thread, before anyone hears that it exited.
            resource = nil
            let waiters = shared.state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.exited = true
                defer { state.exitWaiters = [] }
                return state.exitWaiters
            }
            for waiter in waiters { waiter.resume() }
        }
        thread.name = name
        thread.start()
    }

    /// Names the calling thread as `top -H`, `perf` and `/proc/PID/task/TID/comm` show it (Linux keeps
    /// 15 bytes of a name; Foundation's `Thread.name` does not reach the kernel there).
    private static func nameCurrentThread(_ name: String) {
        #if os(Linux)
        let descriptor = open("/proc/thread-self/comm", O_WRONLY)
        guard descriptor >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        _ = Glibc.close(descriptor)
        #endif
    }

    /// Starts the thread, makes the resource on it and returns once it is made, throwing what
    /// making it threw (the thread is then stopped).
    package convenience init(opening name: String, makeResource: @escaping @Sendable () throws -> Resource) async throws {
        self.init(name: name, makeResource: makeResource)
        do {
            try await run { _ in }
        } catch {
            await shutdown()
            throw error
        }
    }

    deinit {
        close()
    }

    /// Runs `body` with the resource on the thread, after the jobs given before it, and returns
    /// its result. Throws ``DedicatedThreadError`` once the thread is shut down.
    package func run<T: Sendable>(_ body: @escaping @Sendable (Resource) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let job: Job = { resource in
                continuation.resume(with: Result { try body(resource.get()) })
            }
            let accepted = shared.state.withLock { state -> Bool in
                guard !state.closed else { return false }
                state.jobs.append(job)
                return true
            }
            if accepted {
                shared.wake.signal()
            } else {
                continuation.resume(throwing: DedicatedThreadError(name: name))
            }
        }
    }

    /// Lets the thread finish the jobs already given, release the resource and exit; returns once
    /// it has. Later jobs fail.
    package func shutdown() async {
        close()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let exited = shared.state.withLock { state -> Bool in
                if !state.exited { state.exitWaiters.append(continuation) }
                return state.exited
            }
            if exited { continuation.resume() }
        }
    }

    /// Stops taking jobs; the thread finishes the ones already given, releases the resource and
    /// exits, without the caller waiting for it.
    package func close() {
        let first = shared.state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        if first { shared.wake.signal() }
    }
}

extension DedicatedThread where Resource == Void {
    /// Runs one blocking job on a new thread of its own and returns its result; the thread exits
    /// after it.
    package static func run<T: Sendable>(name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        let thread = DedicatedThread(name: name) { () }
        defer { thread.close() }
        return try await thread.run { _ in try body() }
    }
}

/// A job given to a ``DedicatedThread`` after it was shut down.
package struct DedicatedThreadError: Error, CustomStringConvertible {
    /// The thread's name.
    package let name: String

    package var description: String { "the thread \(name) has stopped" }
}
