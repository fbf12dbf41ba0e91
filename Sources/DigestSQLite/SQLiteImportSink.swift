public import DigestStore
import DigestThreads

/// ``HistoryImportSink`` on SQLite: each batch is one transaction, written on the sink's own thread
/// where its connection lives; re-importing the same records changes nothing.
public final class SQLiteImportSink: HistoryImportSink {
    let thread: DedicatedThread<SQLiteImportQueries>

    init(thread: DedicatedThread<SQLiteImportQueries>) {
        self.thread = thread
    }

    public func write(_ batch: ImportBatch) async throws -> ImportBatchResult {
        try await thread.run { try $0.write(batch) }
    }
}
