import Foundation
import Synchronization

/// Runs an action once a condition holds, checking every 5 ms on a thread of its own. A test's task
/// may wait seconds for a thread of a busy test process (CI ran a whole 9,000-message send before a
/// polling test saw 3,000), while the process it watches moves on; a thread acts in time.
///
/// ```swift
/// let kill = Watcher.start(when: { server.stats.delivered >= 3000 }) { sender.signal(SIGKILL) }
/// // … later: kill.fired, or kill.cancel()
/// ```
package final class Watcher: Sendable {
    private let didFire = Atomic<Bool>(false)
    private let cancelled = Atomic<Bool>(false)
    private let failure = Mutex<String?>(nil)

    private init() {}

    /// Starts watching; `action` runs at most once, on the watcher's thread (what it throws is kept
    /// in ``error``).
    package static func start(when condition: @escaping @Sendable () -> Bool, do action: @escaping @Sendable () throws -> Void) -> Watcher {
        let watcher = Watcher()
        Thread.detachNewThread {
            while !watcher.cancelled.load(ordering: .acquiring) {
                if condition() {
                    do { try action() } catch { watcher.failure.withLock { $0 = "\(error)" } }
                    watcher.didFire.store(true, ordering: .releasing)
                    return
                }
                usleep(5_000)
            }
        }
        return watcher
    }

    /// Whether the action ran (to its end).
    package var fired: Bool { didFire.load(ordering: .acquiring) }

    /// What the action threw, if it did.
    package var error: String? { failure.withLock { $0 } }

    /// Stops watching (the action does not run if it has not yet).
    package func cancel() { cancelled.store(true, ordering: .releasing) }
}
