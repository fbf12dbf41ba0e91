import DigestThreads
import Synchronization

/// What a SQLite store keeps open for its life: one writer connection and a few reader connections,
/// each on a thread of its own (``DedicatedThread``), borrowed from ``ResourcePool``s.
///
/// Every write (a ledger's batch, a consumer's lease, an import batch, an event request) is one job on
/// the writer's thread, the only writer SQLite allows a file anyway; the parts that keep state between
/// their calls (a ledger's totals, an import's key caches) keep it on that thread, per scope
/// (``SQLiteWriter/part(_:_:)``). A history reader borrows a reader connection for its scope (its
/// article caches live there for that long); one-off questions borrow one for a statement or two.
final class SQLitePool: Sendable {
    let path: String
    let writer: ResourcePool<DedicatedThread<SQLiteWriter>>
    let readers: ResourcePool<DedicatedThread<SQLiteReader>>
    /// What opening the writer did to the schema, until ``SQLiteDatabase/migrate()`` reports it.
    private let migration: Mutex<(from: Int, to: Int)?>
    private let scopes = Atomic<UInt64>(0)

    private init(path: String, writer: DedicatedThread<SQLiteWriter>, readers: [DedicatedThread<SQLiteReader>], migration: (from: Int, to: Int)) {
        self.path = path
        self.writer = ResourcePool([writer])
        self.readers = ResourcePool(readers)
        self.migration = Mutex(migration)
    }

    /// Opens the writer (creating and migrating the schema of a new or older file), then `readers`
    /// reader connections.
    static func open(path: String, readers: Int) async throws -> SQLitePool {
        let writer = try await DedicatedThread(opening: "sqlite-writer") { try SQLiteWriter(path: path) }
        var opened: [DedicatedThread<SQLiteReader>] = []
        do {
            let migration = try await writer.run { $0.migration }
            for index in 0..<max(1, readers) {
                opened.append(try await DedicatedThread(opening: "sqlite-reader-\(index)") { try SQLiteReader(path: path) })
            }
            return SQLitePool(path: path, writer: writer, readers: opened, migration: migration)
        } catch {
            for thread in opened { await thread.shutdown() }
            await writer.shutdown()
            throw error
        }
    }

    /// Runs `body` on the writer's connection, after the writes asked for before it.
    func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteWriter) throws -> T) async throws -> T {
        try await writer.withResource { thread in
            try await thread.run { writer in
                defer { writer.connection.endLeftovers() }
                return try body(writer)
            }
        }
    }

    /// Runs `body` on a reader connection: the one the calling task's history reader holds, else one
    /// borrowed for the call (so a question asked inside a reader's scope never waits for a second
    /// connection, which a pool of one would never give).
    func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        let job: @Sendable (SQLiteReader) throws -> T = { reader in
            defer { reader.connection.endLeftovers() }
            return try body(reader.connection)
        }
        if let held = heldReader() { return try await held.run(job) }
        return try await readers.withResource { try await $0.run(job) }
    }

    /// Runs `body` with a reader connection for a history reader's scope `id`: the one the calling
    /// task already holds, else one borrowed until `body` returns.
    func withReader<T>(scope id: UInt64, _ body: (DedicatedThread<SQLiteReader>) async throws -> T) async throws -> T {
        func hold(_ thread: DedicatedThread<SQLiteReader>) async throws -> T {
            try await thread.run { $0.histories[id] = SQLiteHistoryQueries(connection: $0.connection) }
            // The queries are dropped even when the task was cancelled.
            return try await withCleanup {
                try await SQLitePool.$held.withValue(HeldReader(pool: ObjectIdentifier(self), thread: thread)) {
                    try await body(thread)
                }
            } cleanup: {
                try? await thread.run { $0.histories[id] = nil }
            }
        }
        if let held = heldReader() { return try await hold(held) }
        return try await readers.withResource { try await hold($0) }
    }

    /// The reader connection a history reader of this pool holds in the calling task, if any.
    private func heldReader() -> DedicatedThread<SQLiteReader>? {
        guard let held = SQLitePool.held, held.pool == ObjectIdentifier(self) else { return nil }
        return held.thread
    }

    struct HeldReader: Sendable {
        let pool: ObjectIdentifier
        let thread: DedicatedThread<SQLiteReader>
    }

    /// The reader connection the calling task's history reader holds.
    @TaskLocal static var held: HeldReader?

    /// What opening migrated, once; later calls migrate on the writer (nothing, unless another
    /// process changed the file).
    func migrate() async throws -> (from: Int, to: Int) {
        if let migration = migration.withLock({ value in defer { value = nil }; return value }) { return migration }
        return try await write { try SQLiteSchema.migrate($0.connection) }
    }

    /// A new scope's id, for the state it keeps on the writer's thread.
    func newScope() -> UInt64 { scopes.wrappingAdd(1, ordering: .relaxed).newValue }

    /// Stops every thread once its jobs are done; the connections close on their threads. The last
    /// connection to the file that closes (the writer, when no other process has it open) folds the
    /// write-ahead log back into the database file and deletes it: after ``SQLiteDatabase/close()``
    /// the file alone holds everything, and a copy of it is a whole store.
    func shutdown() async {
        for thread in readers.resources { await thread.shutdown() }
        for thread in writer.resources { await thread.shutdown() }
    }
}

/// The writer connection, on the writer's thread, with the state each open scope keeps there.
final class SQLiteWriter {
    let connection: SQLiteConnection
    /// The schema versions before and after opening.
    let migration: (from: Int, to: Int)
    private var parts: [UInt64: AnyObject] = [:]

    init(path: String) throws {
        (connection, migration) = try SQLiteSchema.open(path)
    }

    /// The object `scope` keeps on this connection, made on first use.
    func part<Part: AnyObject>(_ scope: UInt64, _ make: (SQLiteConnection) -> Part) -> Part {
        if let part = parts[scope] as? Part { return part }
        let part = make(connection)
        parts[scope] = part
        return part
    }

    /// Forgets what `scope` kept.
    func end(_ scope: UInt64) { parts[scope] = nil }
}

/// A reader connection, on its thread, with the history queries of the scopes that hold it (one, or
/// a scope and those nested in its task).
final class SQLiteReader {
    let connection: SQLiteConnection
    var histories: [UInt64: SQLiteHistoryQueries] = [:]

    init(path: String) throws {
        connection = try SQLiteConnection(path: path)
    }
}

/// A scope's part on the writer: its calls run on the writer's thread with the object the scope keeps
/// there (``SQLiteWriter/part(_:_:)``), dropped when the scope ends.
struct SQLiteWriterScope<Part: AnyObject>: Sendable {
    let pool: SQLitePool
    let id: UInt64
    let make: @Sendable (SQLiteConnection) -> Part

    init(pool: SQLitePool, make: @escaping @Sendable (SQLiteConnection) -> Part) {
        self.pool = pool
        self.id = pool.newScope()
        self.make = make
    }

    func run<T: Sendable>(_ body: @escaping @Sendable (Part) throws -> T) async throws -> T {
        let (id, make) = (id, make)
        return try await pool.write { writer in try body(writer.part(id, make)) }
    }

    /// Runs `body` with this scope, and drops its state on the writer afterwards.
    static func with<T>(
        pool: SQLitePool, make: @escaping @Sendable (SQLiteConnection) -> Part, _ body: (Self) async throws -> T
    ) async throws -> T {
        let scope = Self(pool: pool, make: make)
        let id = scope.id
        // The state is dropped even when the task was cancelled.
        return try await withCleanup { try await body(scope) } cleanup: { try? await pool.write { $0.end(id) } }
    }
}
