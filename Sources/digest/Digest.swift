import ArgumentParser
import DigestPostgres
import DigestSQLite
import DigestSender
import DigestStore
import Foundation
import Logging

@main
struct Digest: AsyncParsableCommand {
    /// `digest --version`.
    static let version = "0.14.0"

    static let configuration = CommandConfiguration(
        commandName: "digest",
        abstract: "Turns each reader's week of reading into a push notification.",
        discussion: """
            Exit statuses: 0 done; 64 a bad command line; 78 a configuration, key or schema refused (fix it: \
            a restart fails the same way); 75 the store or the network unavailable (a later try may work); \
            73 an output file that exists or cannot be created; 1 anything else.
            """,
        version: version,
        subcommands: [
            DemoCommand.self, ImportCommand.self, RunCommand.self, PreviewCommand.self, ServeCommand.self, QueueCommand.self,
            SendCommand.self, MigrateCommand.self, ImagesCommand.self, DevicesCommand.self, CollectCommand.self, ReportCommand.self,
            WebPushCommand.self, SendTestCommand.self,
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

/// Exit statuses a service manager can tell apart (sysexits.h), so that a unit does not restart in a
/// loop on a bad key (`RestartPreventExitStatus=78` in deploy/).
enum ExitStatus {
    /// A configuration, option, key or schema refused: a restart fails the same way (EX_CONFIG).
    static let configuration = ExitCode(78)
    /// The store or the network is unavailable: a later try may work (EX_TEMPFAIL).
    static let unavailable = ExitCode(75)
    /// An output file exists (and is not overwritten) or cannot be created (EX_CANTCREAT).
    static let cannotCreate = ExitCode(73)

    /// The status `error` calls for, when it is one of those two.
    static func of(_ error: any Error) -> ExitCode? {
        switch error {
        case let error as SenderError:
            switch error.code {
            case .store, .unavailable: return unavailable
            case .credentials, .authentication, .thirdPartyAuth, .configuration: return configuration
            default: return nil
            }
        case let error as PostgresStoreError:
            switch error.kind {
            case .unavailable: return unavailable
            case .configuration: return configuration
            case .other: return nil
            }
        default:
            return nil
        }
    }

    /// Runs `body`; an error with a status of its own is printed as one line and exits with it.
    static func mapping<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error where !(error is ExitCode) {
            guard let status = of(error) else { throw error }
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw status
        }
    }
}

/// `--db`: a SQLite file path or a `postgres://` URL.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("db"),
        help: ArgumentHelp(
            """
            The database: a SQLite file path, or postgres://USER@HOST:PORT/DATABASE[?sslmode=require] \
            (password from PGPASSWORD or ~/.pgpass; never put it on the command line). Default: $DIGEST_DB.
            """, valueName: "db"))
    var dbOption: String?

    @Option(
        name: .customLong("db-connections"),
        help: ArgumentHelp(
            """
            Connections the store keeps open for the command's life: SQLite readers beside its one writer \
            (default \(SQLiteDatabase.defaultReaders)), or the PostgreSQL pool (default \(PostgresDatabase.defaultConnections), \
            and one more for the chunk-lease renewer).
            """, valueName: "n"))
    var connections: Int?

    /// `--db`, else `DIGEST_DB`.
    var db: String { dbOption ?? ProcessInfo.processInfo.environment["DIGEST_DB"] ?? "" }

    var isPostgres: Bool { PostgresLocation.isURL(db) }

    func validate() throws {
        guard !db.isEmpty else { throw ValidationError("--db is required (or set DIGEST_DB): a SQLite file path or a postgres:// URL") }
        if let connections, !(1...256).contains(connections) { throw ValidationError("--db-connections must be between 1 and 256") }
        if isPostgres {
            do { _ = try PostgresLocation(url: db) } catch { throw ValidationError("--db: \(error)") }
        }
    }

    /// The store `--db` names; PostgreSQL runs take part in the week's shared run with `run`.
    /// `existing`: a SQLite file must be there already (commands that only read it).
    func open(run: PostgresRunCoordination.Settings = .init(), existing: Bool = false) throws -> any DigestDatabase {
        try Self.open(db, run: run, existing: existing, connections: connections)
    }

    /// The store at `db`: a `postgres://` URL or a SQLite file path.
    static func open(
        _ db: String, run: PostgresRunCoordination.Settings = .init(), existing: Bool = false, connections: Int? = nil
    ) throws -> any DigestDatabase {
        if PostgresLocation.isURL(db) {
            // A bridge until every command opens its store in one scope that runs it (issue 40):
            // the database runs until the process ends.
            let database = try PostgresDatabase.postgres(url: db, run: run, connections: connections ?? PostgresDatabase.defaultConnections)
            _ = try database.runningInTask()
            return database
        }
        if existing && !FileManager.default.fileExists(atPath: db) { throw CommandError("\(db): no such database") }
        return SQLiteDatabase(path: db, readers: connections ?? SQLiteDatabase.defaultReaders)
    }

    /// `--db` for messages: the URL without any password.
    var displayName: String { Self.displayName(db) }

    /// A database for messages: a URL without any password, or the file's path.
    static func displayName(_ db: String) -> String { PostgresLocation.isURL(db) ? PostgresLocation.redacted(db) : db }
}
