import ArgumentParser
import DigestStore

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Create or upgrade the database schema.")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let (from, to) = try await database.withStore { try await $0.migrate() }
        let name = database.displayName
        print(from == to ? "\(name): schema is current (version \(to))" : "\(name): schema upgraded from version \(from) to \(to)")
    }
}
