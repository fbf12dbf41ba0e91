import ArgumentParser

@main
struct Digest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "digest",
        abstract: "Turns each reader's week of reading into a push notification.",
        subcommands: [
            DemoCommand.self, ImportCommand.self, RunCommand.self, QueueCommand.self, MigrateCommand.self,
        ])
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
