import CSQLite

/// An open SQLite database. Not thread-safe and not `Sendable`: a connection is made, used and
/// closed on one thread (a ``SQLiteDatabase`` keeps each on a `DedicatedThread` of its own).
public final class SQLiteConnection {
    let handle: OpaquePointer
    public let path: String
    private var statements: [String: SQLiteStatement] = [:]

    /// Opens (and creates, unless `readOnly`) the database at `path`, with WAL and a busy timeout.
    public init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &db, flags, nil)
        guard code == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(db)
            throw SQLiteError(code: code, message: message, path: path)
        }
        self.handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, Self.busyTimeout)
        // The first statement reads the header: a file that is not a database fails here, clearly.
        try execute("PRAGMA foreign_keys = ON")
        // What a statement deletes or moves is overwritten with zeros, on every connection whatever the
        // library's default: a forgotten reader's bytes must not stay in free space (docs/008), and a
        // row an update moved leaves its old copy there unless the connection that moved it zeroed it.
        // Not `FAST`, which leaves them on the pages it frees.
        try execute("PRAGMA secure_delete = ON")
        if !readOnly {
            // A new database gets 16 KiB pages (before WAL mode writes its first page; an existing one
            // keeps its size). An outbox row is 1–1.5 KB: a 4 KiB page held two or three, and a run
            // wrote and read four times the pages, frames and syscalls for the same rows (measured at
            // 100,000 users: 8% less CPU for a weekly run, the WAL's syscalls halved).
            try execute("PRAGMA page_size = \(Self.pageSize)")
            try execute("PRAGMA journal_mode = WAL")
            try execute("PRAGMA synchronous = NORMAL")
        }
    }

    /// How long a statement waits for another connection's lock, in milliseconds.
    static let busyTimeout: Int32 = 10_000

    /// The page size of the databases this creates.
    public static let pageSize = 16_384

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows.
    public func execute(_ sql: String) throws(SQLiteError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        if code != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(errorMessage)
            throw SQLiteError(code: code, message: message, path: path, sql: sql)
        }
    }

    /// A prepared statement, cached per SQL text and reset for reuse.
    public func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        let statement = try SQLiteStatement(connection: self, sql: sql)
        statements[sql] = statement
        return statement
    }

    /// Resets every cached statement, so none holds the database open (a checkpoint needs that).
    public func resetStatements() {
        for statement in statements.values { statement.reset() }
    }

    /// Ends what a job left open on a connection the store lends again: statements stepped but not
    /// reset (each holds its read snapshot, which would show the next borrower old rows and keep a
    /// checkpoint from passing it) and a transaction not committed (rolled back).
    func endLeftovers() {
        var statement = sqlite3_next_stmt(handle, nil)
        while let current = statement {
            if sqlite3_stmt_busy(current) != 0 { sqlite3_reset(current) }
            statement = sqlite3_next_stmt(handle, current)
        }
        if sqlite3_get_autocommit(handle) == 0 { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
    }

    /// Checkpoints the whole WAL and restarts it from its beginning, waiting (up to the busy
    /// timeout) for readers of other connections to finish their statements.
    public func restartWAL() throws(SQLiteError) {
        resetStatements()
        let code = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_RESTART, nil, nil)
        guard code == SQLITE_OK else { throw error(code, sql: "wal_checkpoint(RESTART)") }
    }

    /// Runs `body` in a transaction (`BEGIN IMMEDIATE`), committing on return and rolling back on error.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Rows changed by the last statement.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    func error(_ code: Int32, sql: String? = nil) -> SQLiteError {
        SQLiteError(code: code, message: String(cString: sqlite3_errmsg(handle)), path: path, sql: sql)
    }
}

/// A failed SQLite call: the result code, SQLite's message, the database and the statement.
public struct SQLiteError: Error, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public let path: String
    public let sql: String?

    /// Set for a database this digest refuses although SQLite reads it (``isRefusal``).
    private var refused = false

    public init(code: Int32, message: String, path: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.sql = sql
    }

    /// A database SQLite reads and this digest refuses: not a digest store, or a newer schema.
    package init(refusing message: String, path: String) {
        self.init(code: SQLITE_ERROR, message: message, path: path)
        refused = true
    }

    /// SQLITE_NOTADB or SQLITE_CORRUPT: the file is damaged or not a database.
    public var isCorrupt: Bool { code & 0xFF == SQLITE_NOTADB || code & 0xFF == SQLITE_CORRUPT }

    /// The file is refused, and will be on every try: damaged, not a database or not a digest store,
    /// a schema newer than this digest's, or a file that cannot be opened or written (a missing
    /// directory, permissions, a read-only medium).
    package var isRefusal: Bool {
        refused || isCorrupt || [SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY, SQLITE_AUTH].contains(code & 0xFF)
    }

    /// A later try may work: the database was busy or locked past the busy timeout (another process
    /// writing, or holding a lock), an I/O error, a full disk or a lock protocol race.
    package var isTransient: Bool {
        !refused && [SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR, SQLITE_FULL, SQLITE_PROTOCOL, SQLITE_NOLFS].contains(code & 0xFF)
    }

    public var description: String {
        var text = "\(path): \(message) (SQLite code \(code))"
        if isCorrupt { text += ": the file is not a usable digest database" }
        return text
    }
}
