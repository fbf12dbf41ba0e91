import Logging
import NIOCore
import PostgresNIO

extension PostgresConnection {
    /// Rows of one statement, all of them read before this returns.
    ///
    /// Through the query whose result the event loop gathers whole and hands over once (awaited,
    /// never waited on), rather than the row sequence, which hands rows over one `await` at a time
    /// under back-pressure: a chunk's few thousand rows cost the run measurably more CPU that way
    /// (BENCHMARKS.md, "Issue 12 side by side").
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        let result: EventLoopFuture<PostgresQueryResult> = self.query(query, logger: Self.quiet)
        return try await result.get().rows
    }

    /// Rows of a named prepared statement, all of them read before this returns. postgres-nio
    /// prepares it on this connection at its first use; after that a call only binds and runs it,
    /// and once the server has planned it five times it keeps a generic plan unless that costs more.
    func rows<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [Statement.Row] {
        var rows: [Statement.Row] = []
        for try await row in try await execute(statement, logger: Self.quiet) { rows.append(row) }
        return rows
    }

    /// Runs one statement to its end (its error, if any, surfaces here rather than being dropped
    /// with an unread result).
    func run(_ query: PostgresQuery) async throws {
        _ = try await rows(query)
    }

    /// Runs a statement that returns a row for each row it changed (`RETURNING 1`); returns how
    /// many it changed.
    func changed(_ query: PostgresQuery) async throws -> Int {
        try await rows(query).count
    }

    static let quiet: Logger = {
        var logger = Logger(label: "digest.postgres")
        logger.logLevel = .critical
        return logger
    }()
}
