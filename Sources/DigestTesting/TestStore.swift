import Foundation

/// The two stores, for tests that run the binary on each.
package enum TestStore: String, CaseIterable, Sendable {
    case sqlite, postgres

    /// `--db` of a new, empty store: a SQLite file in `directory` (made by the first command that
    /// opens it), or a migrated database on the shared throwaway PostgreSQL cluster.
    package func make(in directory: TemporaryDirectory, name: String = "digest") async throws -> String {
        switch self {
        case .sqlite:
            return directory.path("\(name).sqlite")
        case .postgres:
            let url = try PostgresCluster.shared().makeDatabase(name)
            let migrated = try await DigestBinary.run(["migrate", "--db", url])
            guard migrated.status == 0 else { throw PostgresClusterError("digest migrate failed: \(migrated.stderr)") }
            return url
        }
    }
}
