import DigestStore
import DigestTesting
import Foundation
import PostgresNIO
import Testing

@testable import DigestPostgres

/// `--db postgres://…`: what it names, where the password comes from, and that it is never shown.
@Suite struct PostgresLocationTests {
    @Test func theURLNamesHostPortUserDatabaseAndTLS() throws {
        let location = try PostgresLocation(
            url: "postgres://digest@db.internal:6543/app?sslmode=verify-full&sslrootcert=/etc/ca.pem&application_name=w1",
            environment: [:])
        #expect(location.host == "db.internal" && location.port == 6543 && location.user == "digest" && location.database == "app")
        #expect(location.sslMode == .verifyFull && location.sslRootCertificate == "/etc/ca.pem" && location.applicationName == "w1")
        #expect(location.description == "postgres://digest@db.internal:6543/app")
        let defaults = try PostgresLocation(url: "postgresql://digest@db.internal/app", environment: [:])
        #expect(defaults.port == 5432 && defaults.sslMode == .prefer)
    }

    @Test(arguments: [
        ("postgres://u@h/d?sslmode=sometimes", "unknown sslmode 'sometimes'"),
        ("postgres://u@h/d?sslcert=x", "unknown option 'sslcert'"),
        ("mysql://u@h/d", "not a postgres:// URL"),
    ])
    func mistakesAreNamed(url: String, message: String) {
        #expect {
            try PostgresLocation(url: url, environment: [:])
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test func thePasswordComesFromTheURLThenPGPASSWORDThenPgpassAndIsNeverShown() throws {
        let dir = try TemporaryDirectory()
        let pgpass = try dir.write("pgpass", lines: [
            "# host:port:database:user:password",
            "other.host:5432:*:digest:not-this-one",
            #"db.internal:*:app:digest:from\:pgpass"#,
        ])
        let fromFile = try PostgresLocation(url: "postgres://digest@db.internal/app", environment: ["PGPASSFILE": pgpass])
        #expect(PostgresLocationTests.password(fromFile) == "from:pgpass")
        let fromEnvironment = try PostgresLocation(
            url: "postgres://digest@db.internal/app", environment: ["PGPASSFILE": pgpass, "PGPASSWORD": "from-env"])
        #expect(PostgresLocationTests.password(fromEnvironment) == "from-env")
        let inURL = try PostgresLocation(url: "postgres://digest:s3cret@db.internal/app", environment: ["PGPASSWORD": "from-env"])
        #expect(PostgresLocationTests.password(inURL) == "s3cret")
        #expect(!inURL.description.contains("s3cret"))
        #expect(PostgresLocation.redacted("postgres://digest:s3cret@db.internal/app") == "postgres://digest:***@db.internal/app")
        let none = try PostgresLocation(url: "postgres://digest@elsewhere/app", environment: ["PGPASSFILE": pgpass])
        #expect(PostgresLocationTests.password(none) == nil)
    }

    /// The password as the location holds it (not public: read through the mirror).
    static func password(_ location: PostgresLocation) -> String? {
        Mirror(reflecting: location).children.first { $0.label == "password" }?.value as? String
    }

    /// digest's sessions run with the server's JIT off: it compiled the run's statements anew at every
    /// call, and that cost more CPU than executing them. (Both of a database's clients: the shared
    /// pool and the lease renewer's connection.)
    @Test func sessionsRunWithoutJIT() async throws {
        let cluster = try PostgresCluster.shared()
        let location = try PostgresLocation(url: try cluster.makeDatabase("jit"), environment: [:])
        let database = DigestPostgres.PostgresDatabase(location: location)
        let (setting, leaseSetting) = try await database.withRunning {
            let shared = try await database.pool(reconnectWindow: .zero, checkingSchema: false)
            let leases = PostgresPool(clients: database.clients, lane: .leases, reconnectWindow: .zero)
            return (try await shared.rows("SHOW jit").first?.decode(String.self), try await leases.rows("SHOW jit").first?.decode(String.self))
        }
        #expect(setting == "off")
        #expect(leaseSetting == "off")
        // The server's own default, for any other client, is left as it is.
        #expect(try cluster.sql("SHOW jit", database: "postgres") == "on")
    }
}
