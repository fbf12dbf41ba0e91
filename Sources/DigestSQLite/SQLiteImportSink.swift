public import DigestStore
import Foundation

/// ``HistoryImportSink`` on SQLite: each batch is one transaction on the store's writer connection
/// (whose thread keeps the import's key caches for the scope); re-importing the same records changes
/// nothing.
public final class SQLiteImportSink: HistoryImportSink {
    let scope: SQLiteWriterScope<SQLiteImportQueries>

    init(scope: SQLiteWriterScope<SQLiteImportQueries>) {
        self.scope = scope
    }

    /// Writes `batch` by the wall clock.
    public func write(_ batch: ImportBatch) async throws -> ImportBatchResult {
        try await write(batch, at: Int64(Date().timeIntervalSince1970))
    }

    public func write(_ batch: ImportBatch, at now: Int64) async throws -> ImportBatchResult {
        try await scope.run { try $0.write(batch, at: now) }
    }
}
