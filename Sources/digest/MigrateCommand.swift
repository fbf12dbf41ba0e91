import ArgumentParser
import DigestStore

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Create or upgrade the database schema.")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let (from, to) = try SQLiteDatabase.sqlite(path: database.db).migrate()
        print(from == to ? "\(database.db): schema is current (version \(to))" : "\(database.db): schema upgraded from version \(from) to \(to)")
    }
}
