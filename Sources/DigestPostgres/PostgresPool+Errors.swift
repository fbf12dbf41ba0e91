import NIOCore
import PostgresNIO

extension PostgresPool {
    static func isRetryable(_ error: any Error) -> Bool {
        if error is PostgresLease.NoConnection || isConnectionLoss(error) { return true }
        // 40P01 deadlock detected, 40001 serialization failure: the server rolled the unit back.
        let state = (error as? PSQLError)?.serverInfo?[.sqlState]
        return state == "40P01" || state == "40001"
    }

    /// Whether an error means the connection is gone (or could not be made), rather than that the
    /// statement failed.
    static func isConnectionLoss(_ error: any Error) -> Bool {
        if error is PostgresLease.ConnectionLost { return true }
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
        Self.describe(error, location: location, window: reconnectWindow)
    }

    static func describe(_ error: any Error, location: PostgresLocation, window: Duration) -> PostgresStoreError {
        if let error = error as? PostgresStoreError { return error }
        let place = location.description
        if error is PostgresLease.NoConnection {
            return PostgresStoreError("\(place): cannot connect (no connection to the server within \(window))", kind: .unavailable)
        }
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
                return PostgresStoreError("\(place): cannot connect (\(Self.reason(error.underlying)))", kind: .unavailable)
            case .serverClosedConnection, .uncleanShutdown:
                return PostgresStoreError(
                    "\(place): the server closed the connection and did not come back within \(window)", kind: .unavailable)
            case .sslUnsupported:
                return PostgresStoreError(
                    "\(place): the server does not offer TLS, but sslmode=\(location.sslMode.rawValue) requires it", kind: .configuration)
            case .authMechanismRequiresPassword:
                return PostgresStoreError(
                    "\(place): the server asks for a password and none was given (set PGPASSWORD or a .pgpass entry)", kind: .configuration)
            default:
                return PostgresStoreError("\(place): \(error.code)")
            }
        }
        if error is NIOConnectionError || error is IOError || error is ChannelError {
            return PostgresStoreError("\(place): cannot connect (\(Self.reason(error)))", kind: .unavailable)
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
