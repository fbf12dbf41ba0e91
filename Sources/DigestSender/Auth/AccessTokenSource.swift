public import Logging
public import NIOCore

/// Where OAuth 2.0 access tokens come from: a service-account key exchanged at Google's token
/// endpoint (``ServiceAccountTokenSource``) or the GCE/GKE metadata server
/// (``MetadataServerTokenSource``). ``AccessTokenProvider`` caches, refreshes and retries around one.
///
/// A source makes one try per call and says in its error whether another try may work: code
/// ``SenderError/Code-swift.struct/unavailable`` (the server is there but failing, or the network
/// is), which the provider retries with doubling pauses; any other code is final.
public protocol AccessTokenSource: Sendable {
    /// Who the tokens act as, for messages: "the service account NAME".
    var principal: String { get }

    /// One request for a new token, answered within `timeout`.
    func fetchToken(timeout: TimeAmount, logger: Logger) async throws(SenderError) -> AccessToken
}

/// An access token as its source issued it.
public struct AccessToken: Sendable, Hashable {
    /// The bearer token.
    public var value: String
    /// Seconds it stays valid from receipt (`expires_in`).
    public var lifetime: Int64

    public init(value: String, lifetime: Int64) {
        self.value = value
        self.lifetime = lifetime
    }
}
