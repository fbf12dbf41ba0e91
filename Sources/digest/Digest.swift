import ArgumentParser
import DigestPostgres
import DigestSQLite
import DigestSender
import DigestStore
import DigestThreads
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
            WebPushCommand.self, SendTestCommand.self, ReadersCommand.self,
        ])

    /// Logs go to stderr at `DIGEST_LOG_LEVEL` (default `warning`); output stays on stdout.
    static func main() async {
        let level = ProcessInfo.processInfo.environment["DIGEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        await Termination.main(Self.self)
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

    /// The status `error` calls for, when it is one of those: the same for either store.
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
        case let error as SQLiteError:
            if error.isTransient { return unavailable }
            if error.isRefusal { return configuration }
            return nil
        default:
            return nil
        }
    }
}

/// Runs `body` with `store`, then closes the store whether `body` returned or threw (also when the
/// task was cancelled).
func closing<Store: DigestPipelineStore, T>(_ store: Store, _ body: (Store) async throws -> T) async throws -> T {
    try await withCleanup { try await body(store) } cleanup: { await store.close() }
}

/// What the commands work on: either store, with everything about its readers (`digest readers
/// export` and `forget`).
typealias StoreOfReaders = DigestDatabase & ReaderDataStore

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

    /// Runs `body` with the store `--db` names, and closes the store however `body` ends: returned,
    /// thrown, or its task cancelled (SIGTERM, see ``Digest/main()``). PostgreSQL runs take part in the
    /// week's shared run with `run`. `existing`: a SQLite file must be there already (commands that
    /// only read it).
    func withStore<T>(
        run: PostgresRunCoordination.Settings = .init(), existing: Bool = false, _ body: (any StoreOfReaders) async throws -> T
    ) async throws -> T {
        try await Self.withStore(db, run: run, existing: existing, connections: connections, body)
    }

    /// Runs `body` with the store at `db` (a `postgres://` URL or a SQLite file path) and closes it
    /// afterwards, as ``withStore(run:existing:_:)``. A PostgreSQL store's clients run (it is a
    /// `Service`) for the body's length, in this scope; closing a SQLite store folds its write-ahead log
    /// back into the file, so the file alone holds everything once the command ends.
    static func withStore<T>(
        _ db: String, run: PostgresRunCoordination.Settings = .init(), existing: Bool = false, connections: Int? = nil,
        _ body: (any StoreOfReaders) async throws -> T
    ) async throws -> T {
        if PostgresLocation.isURL(db) {
            let database = try PostgresDatabase.postgres(url: db, run: run, connections: connections ?? PostgresDatabase.defaultConnections)
            return try await closing(database) { database in try await database.withRunning { try await body(database) } }
        }
        if existing && !FileManager.default.fileExists(atPath: db) { throw CommandError("\(db): no such database") }
        return try await closing(SQLiteDatabase(path: db, readers: connections ?? SQLiteDatabase.defaultReaders), body)
    }

    /// `--db` for messages: the URL without any password.
    var displayName: String { Self.displayName(db) }

    /// A database for messages: a URL without any password, or the file's path.
    static func displayName(_ db: String) -> String { PostgresLocation.isURL(db) ? PostgresLocation.redacted(db) : db }
}
