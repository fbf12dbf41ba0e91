import DigestCore
import DigestDemo
import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every command closes the store it opened — on success, on error and on SIGTERM — so a SQLite
/// file is whole once the command ends (its write-ahead log folded back, its locks released); and a
/// store's trouble ends a command with the same exit status on SQLite as on PostgreSQL.
@Suite struct StoreLifeTests {
    /// A demo data set of `users` readers (users, articles, reads), written into `dir`.
    func dataset(_ dir: TemporaryDirectory, users: Int, readsPerUser: Int = 14) throws -> [String] {
        var dataset = DemoDataset(week: try ISOWeek(parsing: "2026-W46"))
        dataset.users = users
        dataset.readsPerUser = readsPerUser
        let files = try dataset.write(to: dir.url.appendingPathComponent("data"))
        return [ImportKind.users, .articles, .reads].compactMap { files[$0] }
    }

    /// What the file alone holds: `db` copied without its `-wal` and `-shm`, then asked `sql`.
    func fileAlone(_ db: String, _ sql: String, in dir: TemporaryDirectory) throws -> Int {
        let copy = dir.path("copy-\(UUID().uuidString).sqlite")
        try FileManager.default.copyItem(atPath: db, toPath: copy)
        let connection = try SQLiteConnection(path: copy)
        let statement = try connection.statement(sql)
        return try statement.step() ? statement.int(0) : -1
    }

    /// The file's write-ahead log is gone or empty, and a new connection takes the write lock at once.
    func expectClosed(_ db: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let wal = (try? FileManager.default.attributesOfItem(atPath: db + "-wal")[.size] as? Int) ?? 0
        #expect(wal == 0, "\(db)-wal holds \(wal) bytes after the command ended", sourceLocation: sourceLocation)
        let connection = try SQLiteConnection(path: db)
        try connection.execute("PRAGMA busy_timeout = 0")
        try connection.execute("BEGIN EXCLUSIVE")
        try connection.execute("COMMIT")
    }

    @Test func anImportLeavesEverythingInTheFileItself() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        let imported = try await DigestBinary.run(["import", "--db", db] + dataset(dir, users: 200))
        #expect(imported.status == 0, "\(imported.stderr)")
        try expectClosed(db)
        #expect(try fileAlone(db, "SELECT count(*) FROM users", in: dir) == 200)
    }

    @Test func aCommandThatFailsClosesItsStoreToo() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        let users = try dataset(dir, users: 50)[0]
        // Good lines first (imported in batches), then a bad one: --strict stops there with an error.
        let bad = try dir.write("users-bad.jsonl", lines: [try String(contentsOfFile: users, encoding: .utf8).trimmingCharacters(in: .newlines), "{\"id\": 7}"])
        let failed = try await DigestBinary.run(["import", "--db", db, "--strict", "--users", bad])
        #expect(failed.status != 0, "\(failed.stdout)")
        try expectClosed(db)
        #expect(try fileAlone(db, "SELECT count(*) FROM digest_schema", in: dir) == 1, "the schema was written and folded back")
    }

    @Test func sigtermEndsACommandByTheSignalWithItsStoreClosed() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        let files = try dataset(dir, users: 20_000, readsPerUser: 20)
        let running = try DigestBinary.start(["import", "--db", db] + files, name: "import", in: dir.url)
        // Signalled once the import has written a megabyte, into the log or (after a checkpoint) the
        // file: watched from a thread of its own, so that tests keeping the cooperative pool busy cannot
        // delay the signal until the import has ended.
        let pid = running.process.processIdentifier
        let watcher = Thread {
            func size(_ path: String) -> Int { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }
            let deadline = Date().addingTimeInterval(120)
            while Date() < deadline {
                if size(db + "-wal") + size(db) >= 1_000_000 {
                    kill(pid, SIGTERM)
                    return
                }
                usleep(5_000)
            }
        }
        watcher.start()
        let output = try await running.finish(timeout: .seconds(120))
        #expect(output.signalled && running.process.terminationStatus == SIGTERM, "status \(output.status): \(output.stderr)")
        try expectClosed(db)
    }

    @Test func aStoreLockedByAnotherProcessIsUnavailable() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        let files = try dataset(dir, users: 5)
        #expect(try await DigestBinary.run(["import", "--db", db, files[0]]).status == 0)
        // Another process holds the write lock past the store's busy timeout.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = [
            "python3", "-c",
            "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(60)",
            db,
        ]
        let out = Pipe()
        holder.standardOutput = out
        try DigestBinary.launch(holder)
        defer {
            kill(holder.processIdentifier, SIGKILL)
            holder.waitUntilExit()
        }
        let line = await Task.detached { String(decoding: out.fileHandleForReading.availableData, as: UTF8.self) }.value
        try #require(line.hasPrefix("locked"), "the lock holder did not start: \(line)")

        let locked = try await DigestBinary.run(["import", "--db", db, files[0]])
        #expect(locked.status == 75, "\(locked.stderr)")
        #expect(locked.stderr.contains("database is locked"), "\(locked.stderr)")
    }

    @Test func aFileThatIsNotADigestStoreIsRefused() async throws {
        let dir = try TemporaryDirectory()
        let garbage = dir.path("garbage.sqlite")
        try Data(repeating: 0x5A, count: 64 * 1024).write(to: URL(fileURLWithPath: garbage))
        let notADatabase = try await DigestBinary.run(["queue", "stats", "--db", garbage])
        #expect(notADatabase.status == 78, "\(notADatabase.stderr)")
        #expect(notADatabase.stderr.contains("not a usable digest database"), "\(notADatabase.stderr)")

        let other = dir.path("other.sqlite")
        try SQLiteConnection(path: other).execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        let otherTables = try await DigestBinary.run(["queue", "stats", "--db", other])
        #expect(otherTables.status == 78, "\(otherTables.stderr)")
        #expect(otherTables.stderr.contains("not a digest database"), "\(otherTables.stderr)")
        let connection = try SQLiteConnection(path: other)
        let tables = try connection.statement("SELECT group_concat(name) FROM sqlite_schema WHERE type = 'table'")
        #expect(try tables.step() && tables.string(0) == "invoices", "nothing was added to the other file")
    }

    @Test func aSchemaNewerThanTheBinaryIsRefused() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        #expect(try await DigestBinary.run(["migrate", "--db", db]).status == 0)
        try SQLiteConnection(path: db).execute("UPDATE digest_schema SET version = 999")
        let newer = try await DigestBinary.run(["queue", "stats", "--db", db])
        #expect(newer.status == 78, "\(newer.stderr)")
        #expect(newer.stderr.contains("schema version 999 is newer than this digest"), "\(newer.stderr)")
    }
}
