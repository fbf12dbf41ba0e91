public import AsyncHTTPClient
import Foundation
public import Logging
public import NIOCore
import Synchronization

/// OAuth 2.0 access tokens from an ``AccessTokenSource`` (a service-account key, or the metadata
/// server), cached and refreshed before they expire. Concurrent callers share one refresh; a
/// source that is failing for now (``SenderError/Code-swift.struct/unavailable``) is retried with
/// doubling pauses, and a failed early refresh keeps the current token while it is valid.
///
/// ```swift
/// let tokens = try AccessTokenProvider(account: ServiceAccount(contentsOf: "key.json"), client: client, logger: logger)
/// let token = try await tokens.token()
/// ```
public actor AccessTokenProvider {
    /// How tokens are fetched and kept.
    public struct Configuration: Sendable {
        /// Refresh this long before expiry (at most half the token's lifetime).
        public var refreshMargin: Int64 = 300
        /// Tries of the source while it is unavailable (network errors, 5xx), with doubling pauses.
        public var attempts: Int = 4
        /// The first pause between tries.
        public var retryPause: Duration = .milliseconds(500)
        /// One request's deadline.
        public var timeout: TimeAmount = .seconds(15)
        /// The local clock (Unix seconds) that decides when a token needs refreshing. Tests move it; a
        /// service account's JWT assertion is stamped by its source's clock
        /// (``ServiceAccountTokenSource``, the machine's unless given), which the token endpoint checks.
        public var clock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
        public init() {}
    }

    /// What ``status()`` reports: for `/healthz`.
    public struct Status: Sendable, Hashable {
        /// Seconds the current token stays valid; nil before the first token and once it expired.
        public var secondsLeft: Int64?
        /// Why the last fetch failed, when it did (cleared by the next success).
        public var lastFailure: String?
        /// Whether requests can be authenticated now.
        public var isUsable: Bool { secondsLeft != nil }
    }

    /// Where the tokens come from.
    public nonisolated let source: any AccessTokenSource
    private let configuration: Configuration
    private let logger: Logger
    private var cached: (token: String, expiresAt: Int64, refreshAt: Int64)? {
        didSet { current.withLock { $0.token = cached } }
    }
    /// The cached token and the last failure, readable without entering the actor.
    private nonisolated let current = Mutex<(token: (token: String, expiresAt: Int64, refreshAt: Int64)?, failure: String?)>((nil, nil))
    private nonisolated let requests = Atomic<Int>(0)
    private var refreshing: Task<AccessToken, any Error>?
    /// Tokens fetched so far (for tests and metrics).
    public private(set) var fetches = 0

    public init(source: any AccessTokenSource, configuration: Configuration = .init(), logger: Logger) {
        self.source = source
        self.configuration = configuration
        self.logger = logger
    }

    /// Tokens for a service-account key, exchanged at its `token_uri` through `client`.
    public init(account: ServiceAccount, client: HTTPClient, configuration: Configuration = .init(), logger: Logger) throws(SenderError) {
        self.init(source: try ServiceAccountTokenSource(account: account, client: client), configuration: configuration, logger: logger)
    }

    /// Who the tokens act as, for messages.
    public nonisolated var principal: String { source.principal }

    /// Requests made to the source so far, retries included.
    public nonisolated var sourceRequests: Int { requests.load(ordering: .relaxed) }

    /// The cached token while it needs no refresh, without an actor hop (the per-request fast path);
    /// nil means: call ``token()``.
    public nonisolated func currentToken() -> String? {
        let now = configuration.clock()
        return current.withLock { state in state.token.flatMap { now < $0.refreshAt ? $0.token : nil } }
    }

    /// Whether a valid token is held and why the last fetch failed, without an actor hop.
    public nonisolated func status() -> Status {
        let now = configuration.clock()
        return current.withLock { state in
            Status(secondsLeft: state.token.flatMap { now < $0.expiresAt ? $0.expiresAt - now : nil }, lastFailure: state.failure)
        }
    }

    /// A valid access token, fetched or refreshed when needed.
    public func token() async throws -> String {
        let now = configuration.clock()
        if let cached, now < cached.refreshAt { return cached.token }
        let task: Task<AccessToken, any Error>
        if let running = refreshing {
            task = running
        } else {
            task = Task { try await Self.fetch(for: self) }
            refreshing = task
        }
        do {
            let fetched = try await task.value
            if refreshing == task {
                refreshing = nil
                // Counted from receipt, and refreshed a margin early (at most half the lifetime).
                let expiresAt = configuration.clock() + fetched.lifetime
                cached = (fetched.value, expiresAt, expiresAt - min(configuration.refreshMargin, fetched.lifetime / 2))
                current.withLock { $0.failure = nil }
                fetches += 1
            }
            return fetched.value
        } catch {
            if refreshing == task {
                refreshing = nil
                current.withLock { $0.failure = "\(error)" }
            }
            // A failed early refresh still leaves a token that works until it expires.
            if let cached, now < cached.expiresAt - 5 {
                logger.warning("access token refresh failed; using the current token", metadata: ["error": "\(error)"])
                return cached.token
            }
            throw error
        }
    }

    /// One refresh: the source's tries while it is unavailable.
    private nonisolated static func fetch(for provider: AccessTokenProvider) async throws -> AccessToken {
        let source = provider.source, configuration = provider.configuration, logger = provider.logger
        return try await retryingTransientFailures(attempts: max(1, configuration.attempts), pause: configuration.retryPause, logger: logger) {
            () async throws(SenderError) -> AccessToken in
            provider.requests.add(1, ordering: .relaxed)
            return try await source.fetchToken(timeout: configuration.timeout, logger: logger)
        }
    }

    /// Forgets `token` (FCM said it is not valid), so the next call fetches a new one.
    public func invalidate(_ token: String) {
        if cached?.token == token { cached = nil }
    }
}
