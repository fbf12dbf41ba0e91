import Foundation
import Synchronization

/// A throwaway PostgreSQL cluster for tests: `initdb` in a temporary directory, a free loopback
/// port, `fsync` off, stopped (`pg_ctl stop -m immediate`) and removed when the test process ends.
/// Nothing assumes a server already running; `make test` installs the `postgresql` package.
///
/// ```swift
/// let url = try PostgresCluster.shared().makeDatabase()   // postgres://postgres@127.0.0.1:PORT/test_…
/// ```
package final class PostgresCluster: Sendable {
    package let port: Int
    package let directory: String
    let binaries: String

    private static let sharedCluster = Mutex<Result<PostgresCluster, PostgresClusterError>?>(nil)
    private static let started = Mutex<[String]>([])

    /// The cluster the test process shares (started on first use); each test takes its own database.
    package static func shared() throws(PostgresClusterError) -> PostgresCluster {
        let result = sharedCluster.withLock { cached -> Result<PostgresCluster, PostgresClusterError> in
            if let cached { return cached }
            let made = Result { () throws(PostgresClusterError) -> PostgresCluster in try PostgresCluster() }
            cached = made
            return made
        }
        return try result.get()
    }

    /// Starts a new cluster of its own (for a test that restarts or stops the server).
    package init() throws(PostgresClusterError) {
        binaries = try Self.findBinaries()
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("digest-pg-\(UUID().uuidString.prefix(8))").path
        directory = base
        do {
            try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        } catch {
            throw PostgresClusterError("cannot create \(base): \(error)")
        }
        // initdb refuses to run as root: the cluster then belongs to the postgres user.
        if getuid() == 0 { try Self.shell(["chown", "postgres", base]) }
        try Self.shell(
            Self.asServerUser([
                "\(binaries)/initdb", "-D", "\(base)/data", "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8",
                "--locale=C.UTF-8",
            ]))
        var lastError: PostgresClusterError?
        var chosen = 0
        for _ in 0..<5 {
            let candidate = Self.freePort()
            do {
                try Self.shell(
                    Self.asServerUser([
                        "\(binaries)/pg_ctl", "-D", "\(base)/data", "-w", "-t", "30", "-l", "\(base)/server.log", "-o",
                        Self.serverOptions(port: candidate, directory: base), "start",
                    ]))
                chosen = candidate
                break
            } catch {
                lastError = error
            }
        }
        guard chosen > 0 else {
            let log = (try? String(contentsOfFile: "\(base)/server.log", encoding: .utf8)) ?? ""
            throw PostgresClusterError("\(lastError?.description ?? "pg_ctl start failed")\n\(log.suffix(2000))")
        }
        port = chosen
        Self.started.withLock { $0.append("\(binaries)|\(base)") }
        Self.installExitHandler()
    }

    /// `postgres://postgres@127.0.0.1:PORT/NAME?sslmode=disable`.
    package func url(database: String) -> String {
        "postgres://postgres@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    /// A new empty database; returns its URL.
    package func makeDatabase(_ prefix: String = "test") throws(PostgresClusterError) -> String {
        let name = "\(prefix)_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
        try sql("CREATE DATABASE \(name)", database: "postgres")
        return url(database: name)
    }

    /// Runs SQL through `psql` and returns its unaligned output (rows as `a|b` lines).
    @discardableResult
    package func sql(_ statement: String, database: String) throws(PostgresClusterError) -> String {
        try Self.shell([
            "\(binaries)/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres",
            "-d", database, "-c", statement,
        ])
    }

    /// Runs SQL on the database a URL of this cluster names.
    @discardableResult
    package func sql(_ statement: String, url: String) throws(PostgresClusterError) -> String {
        let name = url.split(separator: "/").last.map { String($0.split(separator: "?")[0]) } ?? "postgres"
        return try sql(statement, database: name)
    }

    /// Stops the server at once (as a crash would), then starts it again on the same port.
    package func restart(downFor seconds: Double = 0) throws(PostgresClusterError) {
        try Self.shell(Self.asServerUser(["\(binaries)/pg_ctl", "-D", "\(directory)/data", "-w", "stop", "-m", "immediate"]))
        if seconds > 0 { Thread.sleep(forTimeInterval: seconds) }
        try Self.shell(
            Self.asServerUser([
                "\(binaries)/pg_ctl", "-D", "\(directory)/data", "-w", "-t", "30", "-l", "\(directory)/server.log", "-o",
                Self.serverOptions(port: port, directory: directory), "start",
            ]))
    }

    /// Loopback only, on `port`; durability off (a test cluster is thrown away).
    private static func serverOptions(port: Int, directory: String) -> String {
        "-p \(port) -c listen_addresses=127.0.0.1 -c unix_socket_directories=\(directory) -c fsync=off -c full_page_writes=off -c max_connections=200"
    }

    private static func asServerUser(_ command: [String]) -> [String] {
        getuid() == 0 ? ["runuser", "-u", "postgres", "--"] + command : command
    }

    /// PostgreSQL's server programs: `PG_BIN`, or the newest `/usr/lib/postgresql/N/bin`.
    static func findBinaries() throws(PostgresClusterError) -> String {
        if let explicit = ProcessInfo.processInfo.environment["PG_BIN"], !explicit.isEmpty { return explicit }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        for version in versions.reversed() where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        throw PostgresClusterError(
            "PostgreSQL's initdb was not found under \(root): run `make setup` (installs the postgresql package) or set PG_BIN")
    }

    static func freePort() -> Int {
        BoundLoopbackPort()?.port ?? Int.random(in: 20000...60000)
    }

    /// Runs a program and returns its output. Output goes through files, not pipes: `pg_ctl start`
    /// leaves a server running that would hold a pipe open forever.
    @discardableResult
    static func shell(_ arguments: [String]) throws(PostgresClusterError) -> String {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("digest-shell-\(UUID().uuidString)")
        let outPath = base.path + ".out", errPath = base.path + ".err"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        defer {
            try? FileManager.default.removeItem(atPath: outPath)
            try? FileManager.default.removeItem(atPath: errPath)
        }
        // posix_spawn and waitpid rather than Foundation's Process, whose exit monitoring was seen to
        // miss a `runuser` child here and wait forever.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_TRUNC, 0o600)
        // Nothing else of this process's: `pg_ctl start` leaves a server running, and a socket it
        // inherited (a database connection of another test, whose descriptor NIO does not mark
        // close-on-exec) would stay open in it after the test closed its own, the server's backend
        // idle and alive for as long as that server.
        if let closeFrom = Self.closeFrom { _ = closeFrom(&actions, 3) }
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        let spawned = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ)
        guard spawned == 0 else { throw PostgresClusterError("\(arguments[0]): cannot start (errno \(spawned))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exitCode = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        guard exitCode == 0 else {
            throw PostgresClusterError("\(arguments.joined(separator: " ")) failed (\(exitCode)): \(err)")
        }
        return out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which its Swift module
    /// does not declare.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    private static let exitHandler = Mutex(false)

    private static func installExitHandler() {
        let install = exitHandler.withLock { installed -> Bool in
            defer { installed = true }
            return !installed
        }
        if install { atexit { PostgresCluster.stopAll() } }
    }

    /// Stops every cluster this process started and removes its files.
    package static func stopAll() {
        let clusters = started.withLock { list -> [String] in
            defer { list.removeAll() }
            return list
        }
        for entry in clusters {
            let parts = entry.split(separator: "|").map(String.init)
            let command = ["\(parts[0])/pg_ctl", "-D", "\(parts[1])/data", "stop", "-m", "immediate"]
            _ = try? shell(getuid() == 0 ? ["runuser", "-u", "postgres", "--"] + command : command)
            try? FileManager.default.removeItem(atPath: parts[1])
        }
    }
}

/// The throwaway cluster could not be made or used.
package struct PostgresClusterError: Error, CustomStringConvertible, Sendable {
    package let description: String
    package init(_ description: String) { self.description = description }
}
