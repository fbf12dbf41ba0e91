import CSQLite

/// A prepared statement of a ``SQLiteConnection``; same threading rule as its connection.
public final class SQLiteStatement {
    let handle: OpaquePointer
    unowned let connection: SQLiteConnection
    let sql: String

    init(connection: SQLiteConnection, sql: String) throws(SQLiteError) {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else { throw connection.error(code, sql: sql) }
        self.handle = statement
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    public func bind(_ value: Int64, at index: Int32) {
        sqlite3_bind_int64(handle, index, value)
    }

    public func bind(_ value: Int, at index: Int32) { bind(Int64(value), at: index) }

    /// Binds an integer, or NULL.
    public func bind(_ value: Int64?, at index: Int32) {
        guard let value else {
            sqlite3_bind_null(handle, index)
            return
        }
        sqlite3_bind_int64(handle, index, value)
    }

    public func bind(_ value: String?, at index: Int32) {
        guard let value else {
            sqlite3_bind_null(handle, index)
            return
        }
        var copy = value
        copy.withUTF8 { buffer in
            _ = sqlite3_bind_text(handle, index, buffer.baseAddress, Int32(buffer.count), csqlite_transient())
        }
    }

    /// Binds UTF-8 bytes as text.
    public func bindText(_ bytes: [UInt8], at index: Int32) {
        bytes.withUnsafeBufferPointer { buffer in
            _ = sqlite3_bind_text(handle, index, buffer.baseAddress, Int32(buffer.count), csqlite_transient())
        }
    }

    /// Binds values in order from index 1.
    public func bind(_ values: [(any SQLiteBindable)?]) {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            if let value { value.bind(to: self, at: index) } else { sqlite3_bind_null(handle, index) }
        }
    }

    /// Advances to the next row; `false` when done.
    @discardableResult
    public func step() throws(SQLiteError) -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE:
            // Finish the statement now: SQLite only promises to end its implicit (read) transaction on
            // reset, and a reader that keeps one open stops checkpoints from restarting the WAL.
            sqlite3_reset(handle)
            return false
        default: throw connection.error(code, sql: sql)
        }
    }

    /// Runs the statement to completion.
    public func run() throws(SQLiteError) {
        while try step() {}
    }

    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    public func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    /// Columns of the statement's result.
    public var columnCount: Int32 { sqlite3_column_count(handle) }

    public func string(_ column: Int32) -> String {
        guard let text = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    public func optionalString(_ column: Int32) -> String? { isNull(column) ? nil : string(column) }

    /// `body` on the UTF-8 bytes of a text column (valid only during the call), without a `String`.
    func withText<T>(_ column: Int32, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        guard let text = sqlite3_column_text(handle, column) else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
        return body(UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, column))))
    }
}

/// A value that can be bound to a statement parameter.
public protocol SQLiteBindable {
    func bind(to statement: SQLiteStatement, at index: Int32)
}

extension Int64: SQLiteBindable {
    public func bind(to statement: SQLiteStatement, at index: Int32) { statement.bind(self, at: index) }
}

extension Int: SQLiteBindable {
    public func bind(to statement: SQLiteStatement, at index: Int32) { statement.bind(Int64(self), at: index) }
}

extension String: SQLiteBindable {
    public func bind(to statement: SQLiteStatement, at index: Int32) { statement.bind(self, at: index) }
}
