package import DigestSQLite
import DigestStore
package import Foundation
import DigestImport

/// The weekly-run fixtures (six users in four languages, week 2026-W46) imported into a new SQLite file.
package enum FixtureDatabase {
    package static let directory = DigestBinary.packageRoot.appendingPathComponent("Tests/DigestRunTests/Fixtures")
    /// The week the fixtures' reads fall in.
    package static let week = "2026-W46"
    /// An instant when 2026-W46 is the latest complete week.
    package static let now = Date(timeIntervalSince1970: 1_795_300_000)

    /// A new database in `directory` holding the fixtures.
    package static func make(in directory: TemporaryDirectory) async throws -> SQLiteDatabase {
        let database = SQLiteDatabase.sqlite(path: directory.path("digest.sqlite"))
        try await database.withImportSink { sink in
            let importer = HistoryImporter(sink: sink)
            for kind in ImportKind.allCases {
                _ = try await importer.importFile(Self.directory.appendingPathComponent("\(kind.rawValue).jsonl").path, as: kind)
            }
        }
        return database
    }
}
