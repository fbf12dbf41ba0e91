import DigestThreads
import Synchronization
import Testing

/// The one waiting line: first come, first served; a cancelled waiter leaves it holding nothing.
@Suite struct AsyncSemaphoreTests {
    /// A value tasks share.
    final class Shared<Value: Sendable>: Sendable {
        let value: Mutex<Value>
        init(_ value: Value) { self.value = Mutex(value) }
        func withLock<T: Sendable>(_ body: (inout Value) -> T) -> T { value.withLock { body(&$0) } }
    }

    /// Waits until `semaphore` has `count` waiters.
    static func waiters(_ semaphore: AsyncSemaphore, _ count: Int) async throws {
        for _ in 0..<2000 where semaphore.waiting != count { try await Task.sleep(for: .milliseconds(1)) }
        #expect(semaphore.waiting == count)
    }

    @Test func waitersGetPermitsInTheOrderTheyCame() async throws {
        let semaphore = AsyncSemaphore(permits: 1)
        try await semaphore.wait()
        let order = Shared<[Int]>([])
        var tasks: [Task<Void, any Error>] = []
        for index in 0..<5 {
            tasks.append(Task {
                try await semaphore.wait()
                order.withLock { $0.append(index) }
                semaphore.signal()
            })
            try await Self.waiters(semaphore, index + 1)
        }
        semaphore.signal()
        for task in tasks { try await task.value }
        #expect(order.withLock { $0 } == [0, 1, 2, 3, 4])
    }

    @Test func aCancelledWaiterLeavesTheLineAndTheOthersStillGetTheirTurn() async throws {
        let semaphore = AsyncSemaphore(permits: 1)
        try await semaphore.wait()
        let first = Task { try await semaphore.wait() }
        try await Self.waiters(semaphore, 1)
        let second = Task {
            try await semaphore.wait()
            semaphore.signal()
        }
        try await Self.waiters(semaphore, 2)
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        #expect(semaphore.waiting == 1)
        // The permit goes to the second waiter, not to the cancelled one.
        semaphore.signal()
        try await second.value
        // And every permit is back: two can be taken by a semaphore of one only after a signal.
        try await semaphore.wait()
        #expect(semaphore.waiting == 0)
    }

    @Test func aTaskCancelledBeforeItWaitsDoesNotWaitAtAll() async throws {
        let semaphore = AsyncSemaphore(permits: 0)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await semaphore.wait()
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(semaphore.waiting == 0)
    }

    @Test func aPoolLendsEachResourceToOneBorrowerAtATime() async throws {
        let pool = ResourcePool([0, 1, 2])
        let borrowed = Shared<Set<Int>>([])
        let most = Shared(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<30 {
                group.addTask {
                    try await pool.withResource { resource in
                        let fresh = borrowed.withLock { set in
                            defer { most.withLock { $0 = max($0, set.count) } }
                            return set.insert(resource).inserted
                        }
                        #expect(fresh, "resource \(resource) lent twice")
                        try await Task.sleep(for: .milliseconds(2))
                        _ = borrowed.withLock { $0.remove(resource) }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(most.withLock { $0 } == 3)
        #expect(pool.waiting == 0)
    }
}
