import DigestCore
import Foundation
import PostgresNIO
import Synchronization

/// This process's part in a shared weekly run on PostgreSQL: its worker name, the chunks it holds,
/// and a thread that renews their leases while it works on them.
///
/// The first process to start a week splits its users into chunks (`digest_run_chunks`). Each
/// process claims one chunk at a time with `FOR UPDATE SKIP LOCKED` and a lease on the server's
/// clock; the chunk's outbox rows and its completion commit in one statement. A chunk whose worker
/// died is claimed again once its lease ends; the outbox's dedupe key keeps the redone chunk from
/// doubling a message.
public final class PostgresRunCoordination: Sendable {
    public struct Settings: Sendable {
        /// Users per chunk when this process is the one that splits the week.
        public var chunkSize = 1000
        /// How long a claim lasts without renewal; renewed every third of it.
        public var lease: Duration = .seconds(60)
        /// How long a lost connection is retried before the run fails.
        public var reconnectWindow: Duration = .seconds(60)
        /// This worker's name in leases (`host:pid:random`).
        public var worker = PostgresRunCoordination.defaultWorkerName()

        public init() {}
    }

    public let settings: Settings
    let location: PostgresLocation
    private let state = Mutex(State())

    struct State {
        var week: String?
        var held: Set<Int> = []
        var renewing = false
    }

    init(location: PostgresLocation, settings: Settings) {
        self.location = location
        self.settings = settings
    }

    var leaseSeconds: Double {
        Double(settings.lease.components.seconds) + Double(settings.lease.components.attoseconds) / 1e18
    }

    static func defaultWorkerName() -> String {
        let host = ProcessInfo.processInfo.hostName
        return "\(host):\(getpid()):\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
    }

    /// Records a claimed chunk; starts the lease renewer on the first claim.
    func holding(_ chunk: Int, week: String) {
        let start = state.withLock { state -> Bool in
            state.week = week
            state.held.insert(chunk)
            guard !state.renewing else { return false }
            state.renewing = true
            return true
        }
        if start { startRenewer() }
    }

    func released(_ chunk: Int) {
        state.withLock { _ = $0.held.remove(chunk) }
    }

    private func startRenewer() {
        let interval = max(0.2, leaseSeconds / 3)
        let thread = Thread { [weak self] in
            var session: PostgresSession?
            while true {
                Thread.sleep(forTimeInterval: interval)
                guard let self else { return }
                let (week, held) = self.state.withLock { ($0.week, Array($0.held)) }
                guard let week, !held.isEmpty else { continue }
                do {
                    if session == nil {
                        session = try PostgresSession(location: self.location, reconnectWindow: self.settings.reconnectWindow)
                    }
                    try session?.run(
                        """
                        UPDATE digest_run_chunks
                        SET leased_until = now() + make_interval(secs => \(self.leaseSeconds))
                        WHERE week = \(week) AND chunk = ANY(\(held)) AND state = 'claimed' AND lease_owner = \(self.settings.worker)
                        """)
                } catch {
                    // The next claim or commit reports a lasting failure; a missed renewal only risks a redo.
                    session = nil
                }
            }
        }
        thread.name = "digest-lease-renewer"
        thread.start()
    }
}
