import DigestCore
import DigestStore

/// The statements behind ``SQLiteOutboxConsumer``: every operation is one `BEGIN IMMEDIATE`
/// transaction, so concurrent senders on one file take turns as writers and never lease the same
/// message twice. Synchronous, on the consumer's own thread, where its connection lives.
final class SQLiteOutboxQueries {
    let connection: SQLiteConnection

    init(connection: SQLiteConnection) {
        self.connection = connection
    }

    func lease(owner: String, limit: Int, now: Int64, leaseSeconds: Int64, maxAttempts: Int, providers: Set<Provider>) throws -> [LeasedMessage] {
        try connection.transaction {
            let sweep = try connection.statement(SQL.expire)
            sweep.bind(now, at: 1)
            sweep.bind(maxAttempts, at: 2)
            try sweep.run()
            try settleWindows(now: now)
            let lease = try connection.statement(SQL.lease)
            lease.bind(owner, at: 1)
            lease.bind(now + leaseSeconds, at: 2)
            lease.bind(now, at: 3)
            lease.bind(limit, at: 4)
            lease.bind(Self.jsonArray(providers), at: 5)
            var messages: [LeasedMessage] = []
            messages.reserveCapacity(limit)
            while try lease.step() { messages.append(try Self.message(lease)) }
            // RETURNING gives rows in no particular order.
            messages.sort { $0.id < $1.id }
            return messages
        }
    }

    /// Expires ready messages past their TTL and holds those whose sending window ended (quiet hours)
    /// until the window after (docs/001).
    private func settleWindows(now: Int64) throws {
        let expire = try connection.statement(SQL.expireTTL)
        expire.bind(now, at: 1)
        try expire.run()
        let hold = try connection.statement(SQL.hold)
        hold.bind(now, at: 1)
        try hold.run()
    }

    @discardableResult
    func settle(_ settlements: [Settlement], owner: String, now: Int64, maxAttempts: Int) throws -> Int {
        guard !settlements.isEmpty else { return 0 }
        return try connection.transaction {
            var applied = 0
            for settlement in settlements {
                let statement: SQLiteStatement
                switch settlement {
                case .sent(let id, let name):
                    statement = try connection.statement(SQL.sent)
                    statement.bind(id, at: 1)
                    statement.bind(owner, at: 2)
                    statement.bind(now, at: 3)
                    statement.bind(name, at: 4)
                case .retry(let id, let at, let error):
                    statement = try connection.statement(SQL.retry)
                    statement.bind(id, at: 1)
                    statement.bind(owner, at: 2)
                    statement.bind(at, at: 3)
                    statement.bind(error, at: 4)
                    statement.bind(maxAttempts, at: 5)
                    statement.bind(now, at: 6)
                case .dead(let id, let reason):
                    statement = try connection.statement(SQL.dead)
                    statement.bind(id, at: 1)
                    statement.bind(owner, at: 2)
                    statement.bind(reason, at: 3)
                    statement.bind(now, at: 4)
                case .unregistered(let id, let reason, let diedAt):
                    let bury = try connection.statement(SQL.buryToken)
                    bury.bind(id, at: 1)
                    bury.bind(owner, at: 2)
                    bury.bind(diedAt ?? now, at: 3)
                    bury.bind(reason, at: 4)
                    try bury.run()
                    statement = try connection.statement(SQL.dead)
                    statement.bind(id, at: 1)
                    statement.bind(owner, at: 2)
                    statement.bind(reason, at: 3)
                    statement.bind(now, at: 4)
                case .release(let id, let until, let reason):
                    statement = try connection.statement(SQL.release)
                    statement.bind(id, at: 1)
                    statement.bind(owner, at: 2)
                    statement.bind(until, at: 3)
                    statement.bind(reason, at: 4)
                }
                try statement.run()
                applied += connection.changes
            }
            return applied
        }
    }

    @discardableResult
    func extendLeases(ids: [Int64], owner: String, until: Int64) throws -> Set<Int64> {
        guard !ids.isEmpty else { return [] }
        return try connection.transaction {
            let statement = try connection.statement(SQL.extend)
            var held = Set<Int64>()
            for id in ids {
                statement.reset()
                statement.bind(id, at: 1)
                statement.bind(owner, at: 2)
                statement.bind(until, at: 3)
                try statement.run()
                if connection.changes > 0 { held.insert(id) }
            }
            return held
        }
    }

    func requeueDead(reasonPrefix: String?, week: String?, now: Int64) throws -> Int {
        try connection.transaction {
            let statement = try connection.statement(SQL.requeue)
            statement.bind(now, at: 1)
            statement.bind(reasonPrefix, at: 2)
            statement.bind(week, at: 3)
            try statement.run()
            return connection.changes
        }
    }

    func peekDue(afterID: Int64, limit: Int, now: Int64, providers: Set<Provider>) throws -> [LeasedMessage] {
        let statement = try connection.statement(SQL.peekDue)
        statement.bind(afterID, at: 1)
        statement.bind(now, at: 2)
        statement.bind(limit, at: 3)
        statement.bind(Self.jsonArray(providers), at: 4)
        var messages: [LeasedMessage] = []
        while try statement.step() { messages.append(try Self.message(statement)) }
        return messages
    }

    /// A row of ``SQL/messageColumns``.
    static func message(_ row: SQLiteStatement) throws -> LeasedMessage {
        let id = row.int64(0)
        return LeasedMessage(
            id: id, dedupeKey: row.string(1), userID: row.string(2), platform: row.string(3), message: row.string(4),
            attempts: row.int(5), provider: try OutboxRow.column(row.string(6), "provider", row: id), target: row.string(7),
            headers: row.optionalString(8))
    }

    /// `["apns","fcm"]`: the set as the JSON array the lease reads with `json_each` (names need no escapes).
    static func jsonArray(_ providers: Set<Provider>) -> String {
        "[" + providers.map { "\"\($0.rawValue)\"" }.sorted().joined(separator: ",") + "]"
    }

    func backlog(now: Int64, providers: Set<Provider>?) throws -> OutboxBacklog {
        try connection.transaction { try settleWindows(now: now) }
        // Every provider's: by the indexes alone. Some: the rows of the ready and leased states are read.
        let statement = try connection.statement(providers == nil ? SQL.backlog : SQL.backlogOfProviders)
        statement.bind(now, at: 1)
        if let providers { statement.bind(Self.jsonArray(providers), at: 2) }
        guard try statement.step() else { return OutboxBacklog() }
        let backlog = OutboxBacklog(
            due: statement.int(0), retrying: statement.int(1), leased: statement.int(2), waiting: statement.int(3),
            nextDue: statement.isNull(4) ? nil : statement.int64(4))
        statement.reset()
        return backlog
    }

    /// The statements, as documented in `docs/003-outbox-consumers.md`.
    enum SQL {
        /// What a sender needs of a row (``SQLiteOutboxQueries/message(_:)`` reads them).
        static let messageColumns = "id, dedupe_key, user_id, platform, message, attempts, provider, target, headers"
        static let expire = """
            UPDATE digest_outbox
            SET state = CASE WHEN attempts >= ?2 THEN 'dead' ELSE 'ready' END,
                last_error = CASE WHEN attempts >= ?2
                    THEN 'LEASE_EXPIRED: the sender holding it stopped answering (gave up after ' || attempts || ' attempts)'
                    ELSE last_error END,
                settled_at = CASE WHEN attempts >= ?2 THEN ?1 END,
                lease_owner = NULL, leased_until = NULL
            WHERE state = 'leased' AND leased_until <= ?1
            """
        static let lease = """
            UPDATE digest_outbox
            SET state = 'leased', attempts = attempts + 1, lease_owner = ?1, leased_until = ?2
            WHERE id IN (
                SELECT id FROM digest_outbox
                WHERE state = 'ready' AND available_at <= ?3 AND provider IN (SELECT value FROM json_each(?5))
                ORDER BY available_at, id LIMIT ?4)
            RETURNING \(messageColumns)
            """
        static let held = "WHERE id = ?1 AND state = 'leased' AND lease_owner = ?2"
        static let sent = """
            UPDATE digest_outbox
            SET state = 'sent', sent_at = ?3, settled_at = ?3, fcm_name = ?4, lease_owner = NULL, leased_until = NULL
            \(held)
            """
        static let retry = """
            UPDATE digest_outbox
            SET state = CASE WHEN attempts >= ?5 THEN 'dead' ELSE 'ready' END,
                available_at = CASE WHEN attempts >= ?5 THEN available_at ELSE ?3 END,
                last_error = CASE WHEN attempts >= ?5
                    THEN ?4 || ' (gave up after ' || attempts || ' attempts)' ELSE ?4 END,
                settled_at = CASE WHEN attempts >= ?5 THEN ?6 END,
                lease_owner = NULL, leased_until = NULL
            \(held)
            """
        static let dead = """
            UPDATE digest_outbox
            SET state = 'dead', last_error = ?3, settled_at = ?4, lease_owner = NULL, leased_until = NULL
            \(held)
            """
        static let release = """
            UPDATE digest_outbox
            SET state = 'ready', attempts = max(attempts - 1, 0), lease_owner = NULL, leased_until = NULL,
                available_at = coalesce(?3, available_at), last_error = coalesce(?4, last_error)
            \(held)
            """
        static let extend = "UPDATE digest_outbox SET leased_until = ?3 \(held)"
        /// A token its provider called unregistered is remembered as dead (by the row's target: a
        /// re-import of the device does not revive it; a registration after `died_at` does). Read from
        /// the row still held under this lease, in the settle's transaction: a message whose reader a
        /// forget removed while it was out buries nothing (`digest readers forget`, docs/008), as every
        /// settlement of it changes nothing.
        static let buryToken = """
            INSERT INTO digest_dead_tokens (token, died_at, reason)
            SELECT target, ?3, ?4 FROM digest_outbox
            WHERE id = ?1 AND state = 'leased' AND lease_owner = ?2 AND target <> ''
            ON CONFLICT (token) DO UPDATE SET died_at = excluded.died_at, reason = excluded.reason
            """
        static let requeue = """
            UPDATE digest_outbox
            SET state = 'ready', attempts = 0, available_at = ?1, settled_at = NULL, lease_owner = NULL, leased_until = NULL
            WHERE state = 'dead'
              AND (?2 IS NULL OR substr(last_error, 1, length(?2)) = ?2)
              AND (?3 IS NULL OR week = ?3)
            """
        static let peekDue = """
            SELECT \(messageColumns) FROM digest_outbox
            WHERE id > ?1 AND state = 'ready' AND available_at <= ?2 AND provider IN (SELECT value FROM json_each(?4))
            ORDER BY id LIMIT ?3
            """
        /// The retries by their partial index, and the ones never tried as every ready message not
        /// due yet less the retries: no count reads the rows (a week's outbox waits here for its
        /// delivery times, and a draining sender asks at every poll).
        static let backlog = """
            SELECT
                (SELECT count(*) FROM digest_outbox WHERE state = 'ready' AND available_at <= ?1),
                (SELECT count(*) FROM digest_outbox INDEXED BY digest_outbox_retrying
                    WHERE state = 'ready' AND available_at > ?1 AND attempts > 0),
                (SELECT count(*) FROM digest_outbox WHERE state = 'leased'),
                (SELECT count(*) FROM digest_outbox WHERE state = 'ready' AND available_at > ?1)
                    - (SELECT count(*) FROM digest_outbox INDEXED BY digest_outbox_retrying
                        WHERE state = 'ready' AND available_at > ?1 AND attempts > 0),
                (SELECT min(available_at) FROM digest_outbox WHERE state = 'ready' AND available_at > ?1)
            """
        /// ``backlog`` of the providers in the JSON array `?2`: each count by the same index, reading
        /// the rows it finds for their provider.
        static let backlogOfProviders = """
            SELECT
                (SELECT count(*) FROM digest_outbox WHERE state = 'ready' AND available_at <= ?1 AND provider IN (SELECT value FROM json_each(?2))),
                (SELECT count(*) FROM digest_outbox INDEXED BY digest_outbox_retrying
                    WHERE state = 'ready' AND available_at > ?1 AND attempts > 0 AND provider IN (SELECT value FROM json_each(?2))),
                (SELECT count(*) FROM digest_outbox WHERE state = 'leased' AND provider IN (SELECT value FROM json_each(?2))),
                (SELECT count(*) FROM digest_outbox
                    WHERE state = 'ready' AND available_at > ?1 AND attempts = 0 AND provider IN (SELECT value FROM json_each(?2))),
                (SELECT min(available_at) FROM digest_outbox
                    WHERE state = 'ready' AND available_at > ?1 AND provider IN (SELECT value FROM json_each(?2)))
            """
        /// A ready message whose TTL ended is never sent. By the partial index over the ready rows'
        /// `expires_at`: left to itself SQLite's planner takes `(state, available_at)` and reads
        /// every ready row, due or not, at every lease (39 ms at 50,000 ready messages).
        static let expireTTL = """
            UPDATE digest_outbox INDEXED BY digest_outbox_expiry
            SET state = 'expired', settled_at = ?1,
                last_error = 'EXPIRED: not sent before its TTL ended at ' || strftime('%Y-%m-%dT%H:%M:%SZ', expires_at, 'unixepoch')
            WHERE state = 'ready' AND expires_at <= ?1
            """
        /// A ready message whose window ended (the reader's quiet hours began) waits for the next one:
        /// its window moves on by whole days until it ends after now; it is due when the quiet hours
        /// before that window end (at once when that has passed), or at its retry time if later.
        /// By the partial index over the ready rows' `window_end`, for the reason above.
        static let hold = """
            UPDATE digest_outbox INDEXED BY digest_outbox_window
            SET available_at = max(available_at, quiet_until + ((?1 - window_end) / 86400) * 86400),
                window_end = window_end + ((?1 - window_end) / 86400 + 1) * 86400,
                quiet_until = quiet_until + ((?1 - window_end) / 86400 + 1) * 86400
            WHERE state = 'ready' AND window_end <= ?1
            """
    }
}
