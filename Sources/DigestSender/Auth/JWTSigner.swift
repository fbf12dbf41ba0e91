import Crypto
import DigestCore
import Foundation
import _CryptoExtras

/// Signs the OAuth 2.0 JWT bearer assertion (RFC 7523) for a service account: RS256 with the file's key.
struct JWTSigner: Sendable {
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    let account: ServiceAccount
    private let key: _RSA.Signing.PrivateKey

    init(account: ServiceAccount) throws(SenderError) {
        self.account = account
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: account.privateKey)
        } catch {
            throw SenderError(.credentials, "the service account's private_key is not an RSA private key in PEM", context: account.clientEmail)
        }
    }

    /// `header.claims.signature`, valid for `lifetime` seconds from `issuedAt`; `scope` and `audience`
    /// (default: FCM's scope, the file's `token_uri`) differ only in tests of a token endpoint.
    func assertion(issuedAt: Int64, lifetime: Int64 = 3600, scope: String = Self.scope, audience: String? = nil) throws -> String {
        var header = JSONWriter(capacity: 96)
        header.beginObject()
        header.field("alg", "RS256")
        header.field("typ", "JWT")
        header.field("kid", account.privateKeyID)
        header.endObject()
        var claims = JSONWriter(capacity: 256)
        claims.beginObject()
        claims.field("iss", account.clientEmail)
        claims.field("scope", scope)
        claims.field("aud", audience ?? account.tokenURI)
        claims.field("iat", Int(issuedAt))
        claims.field("exp", Int(issuedAt + lifetime))
        claims.endObject()
        let signingInput = Base64URL.encode(header.bytes) + "." + Base64URL.encode(claims.bytes)
        let signature = try key.signature(for: Array(signingInput.utf8), padding: .insecurePKCS1v1_5)
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }
}
