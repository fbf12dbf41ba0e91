import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// One PostgreSQL connection used from one thread at a time, with blocking calls (the run's and the
/// sender's database threads block; the NIO event loops do the I/O).
///
/// A lost connection (server restart, network cut, administrator shutdown) is reopened with
/// exponential backoff and jitter, and the interrupted unit of work is run again from its start:
/// every unit the store runs is safe to repeat (idempotent inserts, state-checked updates, and
/// leases that expire). The first connection of a session fails fast instead, so a wrong host or
/// password gives one clear line at once.
final class PostgresSession {
    let location: PostgresLocation
    /// How long a lost connection is retried before the error is thrown.
    let reconnectWindow: Duration
    private let configuration: PostgresConnection.Configuration
    private var connection: PostgresConnection?
    private var connected = false
    private let logger: Logger
    private static let connectionIDs = Mutex(0)

    init(location: PostgresLocation, reconnectWindow: Duration = .seconds(60)) throws(PostgresStoreError) {
        self.location = location
        self.reconnectWindow = reconnectWindow
        self.configuration = try location.configuration()
        var logger = Logger(label: "digest.postgres")
        logger.logLevel = .critical
        self.logger = logger
    }

    deinit {
        if let connection {
            let closing: EventLoopFuture<Void> = connection.close()
            try? closing.wait()
        }
    }

    /// Runs `body` on the connection, reopening it and running `body` again after a connection loss.
    func perform<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let started = ContinuousClock.now
        var delay = Duration.milliseconds(100)
        var attempt = 0
        while true {
            attempt += 1
            do {
                let connection = try open()
                return try body(connection)
            } catch {
                let retryable = Self.isConnectionLoss(error)
                if retryable {
                    dropConnection()
                }
                // Before the first success, give up quickly: the address or the server is wrong.
                let window = connected ? reconnectWindow : .seconds(2)
                guard retryable, started.duration(to: .now) + delay < window else {
                    throw describe(error)
                }
                let jitter = Double.random(in: 0.5...1.5)
                Thread.sleep(forTimeInterval: Double(delay.components.seconds) * jitter + Double(delay.components.attoseconds) / 1e18 * jitter)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// Runs `body` inside `BEGIN … COMMIT` (rolled back when `body` throws), again from the start
    /// after a connection loss.
    func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try perform { connection in
            try connection.run("BEGIN")
            do {
                let value = try body(connection)
                try connection.run("COMMIT")
                return value
            } catch {
                if !Self.isConnectionLoss(error) { _ = try? connection.run("ROLLBACK") }
                throw error
            }
        }
    }

    /// Rows of one statement.
    func rows(_ query: PostgresQuery) throws -> [PostgresRow] {
        try perform { try $0.rows(query) }
    }

    /// Runs one statement; returns the rows it changed.
    @discardableResult
    func run(_ query: PostgresQuery) throws -> Int {
        try perform { try $0.run(query) }
    }

    private func open() throws -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        dropConnection()
        let id = Self.connectionIDs.withLock { value -> Int in
            value += 1
            return value
        }
        let opened = try PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: id, logger: logger
        ).wait()
        connection = opened
        connected = true
        return opened
    }

    /// Closes the lost connection and waits until its channel is closed: postgres-nio asserts that a
    /// connection is closed before it is released (a debug build crashed here on a server restart).
    private func dropConnection() {
        if let connection {
            let closing: EventLoopFuture<Void> = connection.close()
            try? closing.wait()
        }
        connection = nil
    }

    /// Whether an error means the connection is gone (or could not be made), rather than that the
    /// statement failed.
    static func isConnectionLoss(_ error: any Error) -> Bool {
        if let error = error as? PSQLError {
            switch error.code {
            case .connectionError, .serverClosedConnection, .uncleanShutdown, .clientClosedConnection:
                return true
            case .server:
                let state = error.serverInfo?[.sqlState] ?? ""
                // 57P01–57P03: administrator shutdown, crash shutdown, cannot connect now; 08: connection exceptions.
                return state.hasPrefix("57P") || state.hasPrefix("08")
            default:
                return false
            }
        }
        if error is PostgresTransactionError { return false }
        return error is IOError || error is ChannelError || error is NIOConnectionError
    }

    /// One line naming the database and what went wrong, never the password.
    func describe(_ error: any Error) -> PostgresStoreError {
        if let error = error as? PostgresStoreError { return error }
        let place = location.description
        if let error = error as? PSQLError {
            if let info = error.serverInfo, let message = info[.message] {
                let state = info[.sqlState]
                var text = "\(place): \(message)"
                if let detail = info[.detail] { text += " (\(detail))" }
                if let state { text += " [SQLSTATE \(state)]" }
                return PostgresStoreError(text, sqlState: state)
            }
            switch error.code {
            case .connectionError:
                return PostgresStoreError("\(place): cannot connect (\(Self.reason(error.underlying)))")
            case .serverClosedConnection, .uncleanShutdown:
                return PostgresStoreError("\(place): the server closed the connection and did not come back within \(reconnectWindow)")
            case .sslUnsupported:
                return PostgresStoreError("\(place): the server does not offer TLS, but sslmode=\(location.sslMode.rawValue) requires it")
            case .authMechanismRequiresPassword:
                return PostgresStoreError("\(place): the server asks for a password and none was given (set PGPASSWORD or a .pgpass entry)")
            default:
                return PostgresStoreError("\(place): \(error.code)")
            }
        }
        if error is NIOConnectionError || error is IOError || error is ChannelError {
            return PostgresStoreError("\(place): cannot connect (\(Self.reason(error)))")
        }
        return PostgresStoreError("\(place): \(error)")
    }

    private static func reason(_ error: (any Error)?) -> String {
        guard let error else { return "no reason given" }
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first { return reason(first.error) }
            if let dns = error.dnsAAAAError ?? error.dnsAError { return "cannot resolve the host: \(dns)" }
            return "no address to connect to"
        }
        if let error = error as? IOError { return error.description }
        return "\(error)"
    }
}

extension PostgresConnection {
    /// Rows of one statement, waiting for them (never call on an event loop).
    func rows(_ query: PostgresQuery) throws -> [PostgresRow] {
        try self.query(query, logger: Self.quiet).wait().rows
    }

    /// Runs one statement, waiting for it; returns the rows it changed.
    @discardableResult
    func run(_ query: PostgresQuery) throws -> Int {
        try self.query(query, logger: Self.quiet).wait().metadata.rows ?? 0
    }

    static let quiet: Logger = {
        var logger = Logger(label: "digest.postgres")
        logger.logLevel = .critical
        return logger
    }()
}
