import DigestThreads
import Foundation
import Synchronization
import Testing

/// The thread that owns a resource: made, used and released on one thread, jobs in order.
@Suite struct DedicatedThreadTests {
    /// A resource that records the threads it is made, used and released on.
    final class Probe {
        let log: Log
        let madeOn = pthread_self()
        init(log: Log) { self.log = log }
        deinit { log.released(on: pthread_self(), madeOn: madeOn) }
    }

    final class Log: Sendable {
        let state = Mutex<(order: [Int], sameThread: Bool, releasedOnItsThread: Bool?)>(([], true, nil))
        func ran(_ job: Int, on thread: pthread_t, madeOn: pthread_t) {
            state.withLock {
                $0.order.append(job)
                if pthread_equal(thread, madeOn) == 0 { $0.sameThread = false }
            }
        }
        func released(on thread: pthread_t, madeOn: pthread_t) {
            state.withLock { $0.releasedOnItsThread = pthread_equal(thread, madeOn) != 0 }
        }
    }

    @Test func jobsRunInOrderOnTheThreadThatMadeTheResourceWhichIsReleasedThere() async throws {
        let log = Log()
        let thread = try await DedicatedThread(opening: "test-probe") { Probe(log: log) }
        // Jobs given from many tasks at once each run whole, one at a time, on the one thread.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for job in 0..<200 {
                group.addTask { try await thread.run { probe in log.ran(job, on: pthread_self(), madeOn: probe.madeOn) } }
            }
            try await group.waitForAll()
        }
        // Jobs given one after another run in that order.
        for job in 200..<210 { try await thread.run { probe in log.ran(job, on: pthread_self(), madeOn: probe.madeOn) } }
        await thread.shutdown()
        let state = log.state.withLock { $0 }
        #expect(state.order.count == 210 && Set(state.order).count == 210)
        #expect(Array(state.order.suffix(10)) == Array(200..<210))
        #expect(state.sameThread)
        #expect(state.releasedOnItsThread == true)
    }

    struct Refused: Error, Equatable {}

    @Test func aResourceThatCannotBeMadeFailsEveryJobWithItsError() async throws {
        await #expect(throws: Refused.self) { _ = try await DedicatedThread<Int>(opening: "test-refused") { throw Refused() } }
        let thread = DedicatedThread<Int>(name: "test-refused-later") { throw Refused() }
        await #expect(throws: Refused.self) { try await thread.run { $0 + 1 } }
        await thread.shutdown()
    }

    @Test func closingLetsTheRunningJobFinishAndRefusesLaterOnes() async throws {
        let thread = DedicatedThread(name: "test-shutdown") { 41 }
        let (started, running) = AsyncStream.makeStream(of: Void.self)
        let release = DispatchSemaphore(value: 0)
        async let first = thread.run { value -> Int in
            running.yield()
            release.wait()  // holds the thread until the test has closed it
            return value + 1
        }
        var iterator = started.makeAsyncIterator()
        await iterator.next()
        thread.close()
        release.signal()
        #expect(try await first == 42)
        await thread.shutdown()
        await #expect(throws: DedicatedThreadError.self) { try await thread.run { $0 } }
    }

    @Test func aOneOffJobRunsOnAThreadOfItsOwn() async throws {
        let caller = pthread_self()
        let separate = try await DedicatedThread.run(name: "test-one-off") { pthread_equal(pthread_self(), caller) == 0 }
        #expect(separate)
    }
}
