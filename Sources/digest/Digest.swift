import ArgumentParser
import DigestPostgres
import DigestSQLite
import DigestStore
import Foundation
import Logging

@main
struct Digest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "digest",
        abstract: "Turns each reader's week of reading into a push notification.",
        subcommands: [
            DemoCommand.self, ImportCommand.self, RunCommand.self, PreviewCommand.self, ServeCommand.self, QueueCommand.self,
            SendCommand.self, MigrateCommand.self, ImagesCommand.self, DevicesCommand.self,
        ])

    /// Logs go to stderr at `DIGEST_LOG_LEVEL` (default `warning`); output stays on stdout.
    static func main() async {
        let level = ProcessInfo.processInfo.environment["DIGEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        await Self.main(nil)
    }
}

/// `--db`: a SQLite file path or a `postgres://` URL.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .long,
        help: """
            The database: a SQLite file path, or postgres://USER@HOST:PORT/DATABASE[?sslmode=require] \
            (password from PGPASSWORD or ~/.pgpass; never put it on the command line).
            """)
    var db: String

    var isPostgres: Bool { PostgresLocation.isURL(db) }

    func validate() throws {
        if isPostgres {
            do { _ = try PostgresLocation(url: db) } catch { throw ValidationError("--db: \(error)") }
        }
    }

    /// The store `--db` names; PostgreSQL runs take part in the week's shared run with `run`.
    /// `existing`: a SQLite file must be there already (commands that only read it).
    func open(run: PostgresRunCoordination.Settings = .init(), existing: Bool = false) throws -> any DigestDatabase {
        try Self.open(db, run: run, existing: existing)
    }

    /// The store at `db`: a `postgres://` URL or a SQLite file path.
    static func open(_ db: String, run: PostgresRunCoordination.Settings = .init(), existing: Bool = false) throws -> any DigestDatabase {
        if PostgresLocation.isURL(db) { return try PostgresDatabase.postgres(url: db, run: run) }
        if existing && !FileManager.default.fileExists(atPath: db) { throw CommandError("\(db): no such database") }
        return SQLiteDatabase.sqlite(path: db)
    }

    /// `--db` for messages: the URL without any password.
    var displayName: String { Self.displayName(db) }

    /// A database for messages: a URL without any password, or the file's path.
    static func displayName(_ db: String) -> String { PostgresLocation.isURL(db) ? PostgresLocation.redacted(db) : db }
}
