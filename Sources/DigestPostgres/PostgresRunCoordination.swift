import DigestCore
import Foundation
import PostgresNIO
import Synchronization

/// This process's part in a shared weekly run on PostgreSQL: its worker name, the chunks it holds,
/// and a task that renews their leases while it works on them.
///
/// The first process to start a week splits its users into chunks (`digest_run_chunks`). Each
/// process claims one chunk at a time with `FOR UPDATE SKIP LOCKED` and a lease on the server's
/// clock; the chunk's outbox rows and its completion commit in one statement. A chunk whose worker
/// died is claimed again once its lease ends; the outbox's dedupe key keeps the redone chunk from
/// doubling a message.
///
/// The renewer is a task started when the first chunk is held: it sleeps a third of the lease,
/// renews every held chunk's lease in one statement on the database's connection for leases (its
/// own, never behind a slow chunk query in the shared pool), and sleeps again. It is cancelled once
/// no chunk is held any more or the last history reader is closed.
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
    let clients: PostgresClients
    private let state = Mutex(State())

    struct State {
        var week: String?
        var held: Set<Int> = []
        /// History readers open on this coordination.
        var readers = 0
        /// The renewer renewing now, by its number in `renewers`.
        var current: Int?
        /// Renewers not yet ended (the current one, and cancelled ones finishing a renewal), by
        /// number; each removes itself when it ends.
        var renewers: [Int: Task<Void, Never>] = [:]
        var started = 0
    }

    init(clients: PostgresClients, settings: Settings) {
        self.clients = clients
        self.settings = settings
    }

    var leaseSeconds: Double {
        settings.lease.seconds
    }

    static func defaultWorkerName() -> String {
        let host = ProcessInfo.processInfo.hostName
        return "\(host):\(getpid()):\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
    }

    /// Records a claimed chunk; starts the lease renewer when it is the only chunk held.
    func holding(_ chunk: Int, week: String) {
        state.withLock { state in
            state.week = week
            state.held.insert(chunk)
            guard state.current == nil else { return }
            state.started += 1
            let number = state.started
            state.current = number
            // Created under the lock, so the task's own removal (which takes the lock) comes after
            // its entry is in.
            state.renewers[number] = Task { [self] in
                await self.renew()
                _ = self.state.withLock { $0.renewers.removeValue(forKey: number) }
            }
        }
    }

    /// Records a finished chunk; stops the renewer when no chunk is held any more.
    func released(_ chunk: Int) {
        state.withLock { state in
            state.held.remove(chunk)
            guard state.held.isEmpty, let current = state.current else { return }
            state.renewers[current]?.cancel()
            state.current = nil
        }
    }

    /// A history reader opened.
    func readerOpened() {
        state.withLock { $0.readers += 1 }
    }

    /// A history reader closed: once the last one is, the chunks it held are forgotten (their leases
    /// end on their own) and the renewers stop; returns when they have.
    func readerClosed() async {
        let renewers = state.withLock { state -> [Task<Void, Never>] in
            state.readers -= 1
            guard state.readers <= 0 else { return [] }
            state.readers = 0
            state.held.removeAll()
            state.current = nil
            return Array(state.renewers.values)
        }
        for renewer in renewers {
            renewer.cancel()
            await renewer.value
        }
    }

    /// Every third of the lease, moves the held chunks' leases on, until cancelled. A failed
    /// renewal is left to the next one (the next claim or commit reports a lasting failure; a missed
    /// renewal only risks a redo).
    private func renew() async {
        let interval = max(Duration.milliseconds(200), settings.lease / 3)
        let pool = PostgresPool(clients: clients, lane: .leases, reconnectWindow: settings.reconnectWindow)
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: interval)
            } catch {
                break
            }
            let (week, held) = state.withLock { ($0.week, Array($0.held)) }
            guard let week, !held.isEmpty else { continue }
            try? await pool.run(
                """
                UPDATE digest_run_chunks
                SET leased_until = now() + make_interval(secs => \(leaseSeconds))
                WHERE week = \(week) AND chunk = ANY(\(held)) AND state = 'claimed' AND lease_owner = \(settings.worker)
                """)
        }
    }
}
