import Synchronization

/// A fixed set of resources made once (connections on their threads, renderers) that callers borrow
/// one at a time: a borrower waits in the line of an ``AsyncSemaphore`` (first come, first served;
/// cancellable) and gives the resource back when its body returns or throws.
///
/// ```swift
/// let readers = ResourcePool(threads)
/// let count = try await readers.withResource { thread in try await thread.run { try $0.count() } }
/// ```
package final class ResourcePool<Resource: Sendable>: Sendable {
    private let permits: AsyncSemaphore
    /// The resources not borrowed now; the most recently returned is lent first (its caches are warm).
    private let idle: Mutex<[Resource]>
    /// Every resource of the pool, borrowed or not.
    package let resources: [Resource]

    package init(_ resources: [Resource]) {
        precondition(!resources.isEmpty, "a pool needs at least one resource")
        self.resources = resources
        permits = AsyncSemaphore(permits: resources.count)
        idle = Mutex(resources)
    }

    /// Runs `body` with a resource of its own, waiting for one if all are lent. Throws
    /// `CancellationError` when the task is cancelled while it waits.
    package func withResource<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (Resource) async throws -> T
    ) async throws -> T {
        try await permits.wait()
        let resource = idle.withLock { $0.removeLast() }
        defer {
            idle.withLock { $0.append(resource) }
            permits.signal()
        }
        return try await body(resource)
    }

    /// Tasks waiting for a resource now.
    package var waiting: Int { permits.waiting }
}
