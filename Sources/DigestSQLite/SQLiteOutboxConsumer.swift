public import DigestCore
public import DigestStore

/// ``OutboxConsumer`` on SQLite: every operation is one `BEGIN IMMEDIATE` transaction, so concurrent
/// senders on one file take turns as writers and never lease the same message twice. In a process,
/// calls run one at a time, in the order they came, on the store's writer connection.
public final class SQLiteOutboxConsumer: OutboxConsumer {
    let scope: SQLiteWriterScope<SQLiteOutboxQueries>

    init(scope: SQLiteWriterScope<SQLiteOutboxQueries>) {
        self.scope = scope
    }

    public func lease(
        owner: String, limit: Int, now: Int64, leaseSeconds: Int64, maxAttempts: Int, providers: Set<Provider>
    ) async throws -> [LeasedMessage] {
        try await scope.run {
            try $0.lease(owner: owner, limit: limit, now: now, leaseSeconds: leaseSeconds, maxAttempts: maxAttempts, providers: providers)
        }
    }

    public func settle(_ settlements: [Settlement], owner: String, now: Int64, maxAttempts: Int) async throws -> Int {
        try await scope.run { try $0.settle(settlements, owner: owner, now: now, maxAttempts: maxAttempts) }
    }

    public func extendLeases(ids: [Int64], owner: String, until: Int64) async throws -> Set<Int64> {
        try await scope.run { try $0.extendLeases(ids: ids, owner: owner, until: until) }
    }

    public func requeueDead(reasonPrefix: String?, week: String?, now: Int64) async throws -> Int {
        try await scope.run { try $0.requeueDead(reasonPrefix: reasonPrefix, week: week, now: now) }
    }

    public func peekDue(afterID: Int64, limit: Int, now: Int64, providers: Set<Provider>) async throws -> [LeasedMessage] {
        try await scope.run { try $0.peekDue(afterID: afterID, limit: limit, now: now, providers: providers) }
    }

    public func backlog(now: Int64, providers: Set<Provider>?) async throws -> OutboxBacklog {
        try await scope.run { try $0.backlog(now: now, providers: providers) }
    }
}
