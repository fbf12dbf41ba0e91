import ArgumentParser
import Foundation
import Logging

@main
struct Digest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "digest",
        abstract: "Turns each reader's week of reading into a push notification.",
        subcommands: [
            DemoCommand.self, ImportCommand.self, RunCommand.self, PreviewCommand.self, ServeCommand.self, QueueCommand.self,
            SendCommand.self, MigrateCommand.self, ImagesCommand.self,
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

/// `--db`: a SQLite file path.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .long, help: "The database: a SQLite file path.")
    var db: String

    func validate() throws {
        if db.hasPrefix("postgres://") || db.hasPrefix("postgresql://") {
            throw ValidationError("PostgreSQL is not supported by this build yet: use a SQLite file path")
        }
    }
}
