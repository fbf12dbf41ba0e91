public import AsyncHTTPClient
import Foundation
public import Logging
public import NIOCore
import NIOHTTP1
import Synchronization

/// OAuth 2.0 access tokens for a service account: a JWT signed with the account's key, exchanged at its
/// `token_uri`, cached, and refreshed before it expires. Concurrent callers share one refresh.
public actor AccessTokenProvider {
    /// How tokens are fetched and kept.
    public struct Configuration: Sendable {
        /// Refresh this long before expiry (at most half the token's lifetime).
        public var refreshMargin: Int64 = 300
        /// Tries of the token endpoint on network errors or 5xx, with doubling pauses.
        public var attempts: Int = 4
        /// The first pause between tries.
        public var retryPause: Duration = .milliseconds(500)
        public var timeout: TimeAmount = .seconds(15)
        /// The local clock (Unix seconds) that decides when a token needs refreshing; the JWT itself
        /// is always stamped with the real time. Tests move it.
        public var clock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
        public init() {}
    }

    private let signer: JWTSigner
    private let client: HTTPClient
    private let configuration: Configuration
    private let logger: Logger
    private var cached: (token: String, expiresAt: Int64, refreshAt: Int64)? {
        didSet { current.withLock { $0 = cached.map { ($0.token, $0.refreshAt) } } }
    }
    /// The cached token for ``currentToken()``, readable without entering the actor.
    private nonisolated let current = Mutex<(token: String, refreshAt: Int64)?>(nil)
    private var refreshing: Task<(String, Int64), any Error>?
    /// Tokens fetched so far (for tests and metrics).
    public private(set) var fetches = 0

    public init(account: ServiceAccount, client: HTTPClient, configuration: Configuration = .init(), logger: Logger) throws(SenderError) {
        self.signer = try JWTSigner(account: account)
        self.client = client
        self.configuration = configuration
        self.logger = logger
    }

    /// The cached token while it needs no refresh, without an actor hop (the per-request fast path);
    /// nil means: call ``token()``.
    public nonisolated func currentToken() -> String? {
        let now = configuration.clock()
        return current.withLock { cached in cached.flatMap { now < $0.refreshAt ? $0.token : nil } }
    }

    /// A valid access token, fetched or refreshed when needed.
    public func token() async throws -> String {
        let now = configuration.clock()
        if let cached, now < cached.refreshAt { return cached.token }
        let task: Task<(String, Int64), any Error>
        if let running = refreshing {
            task = running
        } else {
            let signer = signer, client = client, configuration = configuration, logger = logger
            task = Task { try await Self.fetch(signer: signer, client: client, configuration: configuration, logger: logger) }
            refreshing = task
        }
        do {
            let (token, lifetime) = try await task.value
            if refreshing == task {
                refreshing = nil
                // Counted from receipt, and refreshed a margin early (at most half the lifetime).
                let expiresAt = configuration.clock() + lifetime
                cached = (token, expiresAt, expiresAt - min(configuration.refreshMargin, lifetime / 2))
                fetches += 1
            }
            return token
        } catch {
            if refreshing == task { refreshing = nil }
            // A failed early refresh still leaves a token that works until it expires.
            if let cached, now < cached.expiresAt - 5 {
                logger.warning("access token refresh failed; using the current token", metadata: ["error": "\(error)"])
                return cached.token
            }
            throw error
        }
    }

    /// Forgets `token` (FCM said it is not valid), so the next call fetches a new one.
    public func invalidate(_ token: String) {
        if cached?.token == token { cached = nil }
    }

    nonisolated static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    private static func fetch(
        signer: JWTSigner, client: HTTPClient, configuration: Configuration, logger: Logger
    ) async throws -> (String, Int64) {
        let uri = signer.account.tokenURI
        var pause = configuration.retryPause
        for attempt in 1...max(1, configuration.attempts) {
            let issuedAt = now()
            var request = HTTPClientRequest(url: uri)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            let assertion = try signer.assertion(issuedAt: issuedAt)
            request.body = .bytes(ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
            let status: UInt
            let body: ByteBuffer
            do {
                let response = try await client.execute(request, timeout: configuration.timeout)
                status = response.status.code
                body = try await response.body.collect(upTo: 1 << 20)
            } catch {
                guard attempt < configuration.attempts else {
                    throw SenderError(.authentication, "the token endpoint did not answer: \(error)", context: uri)
                }
                logger.notice("token endpoint unreachable; retrying", metadata: ["error": "\(error)"])
                try await Task.sleep(for: pause)
                pause *= 2
                continue
            }
            let json = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any] ?? [:]
            if status == 200, let token = json["access_token"] as? String, !token.isEmpty {
                let lifetime = (json["expires_in"] as? NSNumber)?.int64Value ?? 3600
                logger.debug("fetched an access token", metadata: ["expires_in": "\(lifetime)"])
                return (token, lifetime)
            }
            if status >= 500 && attempt < configuration.attempts {
                try await Task.sleep(for: pause)
                pause *= 2
                continue
            }
            let reason = [json["error"] as? String, json["error_description"] as? String].compactMap { $0 }.joined(separator: ": ")
            throw SenderError(
                .authentication,
                "the token endpoint refused the service account (HTTP \(status)\(reason.isEmpty ? "" : ", \(reason)"))",
                context: uri)
        }
        throw SenderError(.authentication, "no access token", context: uri)
    }
}
