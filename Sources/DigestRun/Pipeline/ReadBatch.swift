import DigestCore
import DigestStore

/// A batch of users with the reads their digests need.
struct ReadBatch: Sendable {
    var users: [StoredReader]
    var histories: [ReaderHistory]
    /// Where the run stands once this batch commits (cursor or chunk, as the store decides).
    var lastKey: Int64
    /// Rolling runs: the zones' cursors once this batch commits.
    var zoneCursors: [ZoneCursor]? = nil

    /// The next batch after `key`, or `nil` when no users are left, with what each user's digest
    /// needs of their history.
    static func load(
        from history: some HistoryReader, after key: Int64, limit: Int, composer: BatchComposer
    ) async throws -> ReadBatch? {
        guard let batch = try await history.nextBatch(week: composer.calendar.week, after: key, limit: limit) else { return nil }
        let histories = try await history.histories(of: batch.users, for: composer)
        return ReadBatch(users: batch.users, histories: histories, lastKey: batch.position)
    }

    /// The batch's digests, plans and messages; `sequence` is its number in the run (the order the
    /// run writes batches in), which orders its messages' ids.
    func compose(with composer: BatchComposer, sequence: Int) async -> BatchResult {
        let composed = await composer.compose(users.map(\.reader), histories: histories, batch: sequence)
        return BatchResult(lastKey: lastKey, composed: composed, zoneCursors: zoneCursors)
    }
}

/// What one batch produced, and where the run stands once it commits.
struct BatchResult: Sendable {
    var lastKey: Int64
    var composed: ComposedBatch
    var zoneCursors: [ZoneCursor]? = nil
}
