import Foundation
import NIOSSL
import PostgresNIO

/// Where a PostgreSQL database is, parsed from a `postgres://` URL as libpq reads it:
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…&sslrootcert=…&application_name=…]`.
///
/// The password comes from the URL, else `PGPASSWORD`, else the `.pgpass` file (`PGPASSFILE` or
/// `~/.pgpass`). It never appears in ``description`` or in an error.
public struct PostgresLocation: Sendable, CustomStringConvertible {
    public enum SSLMode: String, Sendable, CaseIterable {
        /// Plain TCP.
        case disable
        /// TLS when the server offers it, without checking its certificate (libpq's default).
        case prefer
        /// TLS always, without checking the certificate.
        case require
        /// TLS always; the certificate must chain to `sslrootcert` (or the system roots).
        case verifyCA = "verify-ca"
        /// As `verify-ca`, and the certificate must name the host.
        case verifyFull = "verify-full"
    }

    public var host: String
    public var port: Int
    public var user: String
    public var database: String
    public var sslMode: SSLMode
    public var sslRootCertificate: String?
    public var applicationName: String
    var password: String?

    /// `true` when `text` names a PostgreSQL database rather than a SQLite file.
    public static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// The location a URL names, with libpq's environment variables and `.pgpass` filling the gaps.
    public init(url text: String) throws(PostgresStoreError) {
        try self.init(url: text, environment: ProcessInfo.processInfo.environment)
    }

    public init(url text: String, environment: [String: String]) throws(PostgresStoreError) {
        guard Self.isURL(text), let components = URLComponents(string: text) else {
            throw PostgresStoreError("not a postgres:// URL: \(Self.redacted(text))")
        }
        host = components.host.flatMap { $0.isEmpty ? nil : $0 } ?? environment["PGHOST"] ?? "127.0.0.1"
        port = components.port ?? environment["PGPORT"].flatMap(Int.init) ?? 5432
        user = components.user.flatMap { $0.isEmpty ? nil : $0.removingPercentEncoding }
            ?? environment["PGUSER"] ?? environment["USER"] ?? "postgres"
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.isEmpty ? (environment["PGDATABASE"] ?? user) : (path.removingPercentEncoding ?? path)
        var mode = SSLMode.prefer
        var rootCertificate: String?
        var application = "digest"
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let value = item.value, let parsed = SSLMode(rawValue: value) else {
                    throw PostgresStoreError(
                        "unknown sslmode '\(item.value ?? "")' (use \(SSLMode.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                mode = parsed
            case "sslrootcert": rootCertificate = item.value
            case "application_name": application = item.value ?? application
            case "connect_timeout": break
            default:
                throw PostgresStoreError("unknown option '\(item.name)' in the database URL (known: sslmode, sslrootcert, application_name)")
            }
        }
        sslMode = mode
        sslRootCertificate = rootCertificate
        applicationName = application
        if let given = components.password, !given.isEmpty {
            password = given.removingPercentEncoding ?? given
        } else if let fromEnvironment = environment["PGPASSWORD"] {
            password = fromEnvironment
        } else {
            let file = environment["PGPASSFILE"] ?? (environment["HOME"].map { $0 + "/.pgpass" })
            password = file.flatMap {
                Self.passwordFromFile($0, host: host, port: port, database: database, user: user)
            }
        }
    }

    /// `postgres://user@host:port/database`, never with the password.
    public var description: String { "postgres://\(user)@\(host):\(port)/\(database)" }

    /// A URL as given, with any password replaced by `***`, for error messages.
    package static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "***"
        return components.string ?? "postgres://…"
    }

    /// The first matching line of a `.pgpass` file (`host:port:database:user:password`, `*` matches
    /// anything, `\:` and `\\` escape), as libpq reads it.
    static func passwordFromFile(_ path: String, host: String, port: Int, database: String, user: String) -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) where !line.hasPrefix("#") {
            var fields: [String] = []
            var current = ""
            var escaping = false
            for character in line {
                if escaping {
                    current.append(character)
                    escaping = false
                } else if character == "\\" {
                    escaping = true
                } else if character == ":" && fields.count < 4 {
                    fields.append(current)
                    current = ""
                } else {
                    current.append(character)
                }
            }
            fields.append(current)
            guard fields.count == 5 else { continue }
            let wanted = [host, String(port), database, user]
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    /// The TLS settings `sslmode` and `sslrootcert` ask for (nil: plain TCP).
    func tlsConfiguration() -> TLSConfiguration? {
        switch sslMode {
        case .disable:
            return nil
        case .prefer, .require:
            var settings = TLSConfiguration.makeClientConfiguration()
            settings.certificateVerification = .none
            return settings
        case .verifyCA, .verifyFull:
            var settings = TLSConfiguration.makeClientConfiguration()
            settings.certificateVerification = sslMode == .verifyFull ? .fullVerification : .noHostnameVerification
            if let sslRootCertificate {
                settings.trustRoots = .file(sslRootCertificate)
            }
            return settings
        }
    }

    /// The startup parameters of every connection digest makes. jit off: the server would compile
    /// each of a run's statements with LLVM again at every call (their row estimates put them over
    /// jit_above_cost), which took more of its CPU than running them did (docs/005, "Server settings of
    /// digest's connections").
    var startupParameters: [(String, String)] { [("application_name", applicationName), ("jit", "off")] }

    /// The settings of one connection made directly (the database's first, which reports a wrong
    /// host, password or TLS setting at once).
    func connectionConfiguration() throws(PostgresStoreError) -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS
        do {
            if let settings = tlsConfiguration() {
                let context = try NIOSSLContext(configuration: settings)
                tls = sslMode == .prefer ? .prefer(context) : .require(context)
            } else {
                tls = .disable
            }
        } catch {
            throw PostgresStoreError("\(description): cannot set up TLS (\(error))")
        }
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tls)
        configuration.options.additionalStartupParameters = startupParameters
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    /// The settings of a client (postgres-nio's pool) of at most `connections` connections, `minimum`
    /// of them kept open while it runs, with the same TLS and startup parameters as
    /// ``connectionConfiguration()``.
    func clientConfiguration(connections: Int, minimum: Int = 0) -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        if let settings = tlsConfiguration() {
            tls = sslMode == .prefer ? .prefer(settings) : .require(settings)
        } else {
            tls = .disable
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tls)
        configuration.options.additionalStartupParameters = startupParameters
        configuration.options.connectTimeout = .seconds(10)
        configuration.options.minimumConnections = minimum
        configuration.options.maximumConnections = connections
        return configuration
    }
}

/// A PostgreSQL store failed; one line that says what and where, never with a password.
public struct PostgresStoreError: Error, CustomStringConvertible, Sendable {
    /// What a caller (a service manager, through the exit status) can do about it.
    public enum Kind: Sendable, Hashable {
        /// The server or the network is not there now: a later try may work.
        case unavailable
        /// The URL, credentials, TLS settings or schema are refused: a later try fails the same way.
        case configuration
        /// Anything else.
        case other
    }

    public let description: String
    /// The server's SQLSTATE, when the server answered with an error.
    public let sqlState: String?
    public let kind: Kind

    package init(_ description: String, sqlState: String? = nil, kind: Kind? = nil) {
        self.description = description
        self.sqlState = sqlState
        self.kind = kind ?? Self.kind(of: sqlState)
    }

    /// By SQLSTATE class: 08 (connection) and 57P (shutdown) unavailable; 28 (authorization), 3D
    /// (no such database) and 42501 (no privilege) configuration.
    static func kind(of sqlState: String?) -> Kind {
        guard let sqlState else { return .other }
        if sqlState.hasPrefix("08") || sqlState.hasPrefix("57P") { return .unavailable }
        if sqlState.hasPrefix("28") || sqlState.hasPrefix("3D") || sqlState == "42501" { return .configuration }
        return .other
    }
}
