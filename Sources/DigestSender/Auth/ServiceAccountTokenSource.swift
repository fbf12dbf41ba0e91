public import AsyncHTTPClient
import Foundation
public import Logging
public import NIOCore
import NIOHTTP1

/// Access tokens for a service-account key: a JWT bearer assertion (RFC 7523) signed with the key,
/// exchanged at the key's `token_uri`.
///
/// Network failures, 429 and 5xx answers are ``SenderError/Code-swift.struct/unavailable`` (retried,
/// then exit 75); a refusal (a revoked key, a wrong clock) is
/// ``SenderError/Code-swift.struct/authentication`` (exit 78).
public struct ServiceAccountTokenSource: AccessTokenSource {
    public let account: ServiceAccount
    private let signer: JWTSigner
    private let client: HTTPClient
    private let clock: @Sendable () -> Int64

    /// Checks the key now: a key that does not parse throws here, not at the first refresh. `clock`
    /// (Unix seconds; nil: the machine's) stamps each assertion's issue time, which the token endpoint
    /// checks against its own.
    public init(account: ServiceAccount, client: HTTPClient, clock: (@Sendable () -> Int64)? = nil) throws(SenderError) {
        self.account = account
        self.signer = try JWTSigner(account: account)
        self.client = client
        self.clock = clock ?? { Int64(Date().timeIntervalSince1970) }
    }

    public var principal: String { "the service account \(account.clientEmail)" }

    public func fetchToken(timeout: TimeAmount, logger: Logger) async throws(SenderError) -> AccessToken {
        let uri = account.tokenURI
        var request = HTTPClientRequest(url: uri)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let assertion: String
        do {
            assertion = try signer.assertion(issuedAt: clock())
        } catch {
            throw SenderError(.credentials, "cannot sign the token request with the service account's key: \(error)", context: account.clientEmail)
        }
        request.body = .bytes(ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
        let status: UInt
        let body: ByteBuffer
        do {
            let response = try await client.execute(request, timeout: timeout)
            status = response.status.code
            body = try await response.body.collect(upTo: 1 << 20)
        } catch {
            throw SenderError(.unavailable, "the token endpoint did not answer: \(error)", context: uri)
        }
        let json = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any] ?? [:]
        if status == 200, let token = json["access_token"] as? String, !token.isEmpty {
            let lifetime = (json["expires_in"] as? NSNumber)?.int64Value ?? 3600
            logger.debug("fetched an access token", metadata: ["expires_in": "\(lifetime)"])
            return AccessToken(value: token, lifetime: lifetime)
        }
        let reason = [json["error"] as? String, json["error_description"] as? String].compactMap { $0 }.joined(separator: ": ")
        let detail = "HTTP \(status)\(reason.isEmpty ? "" : ", \(reason)")"
        if status >= 500 || status == 429 {
            throw SenderError(.unavailable, "the token endpoint is failing (\(detail))", context: uri)
        }
        throw SenderError(.authentication, "the token endpoint refused the service account (\(detail))", context: uri)
    }
}
