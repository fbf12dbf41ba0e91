import Crypto
import DigestCore
import Synchronization

/// The APNs provider token (a JWT, ES256): header `{"alg":"ES256","kid":KEY_ID}`, claims
/// `{"iss":TEAM_ID,"iat":NOW}`, signed with the ``APNsSigningKey``. One per process, shared by every
/// connection and request (a `Mutex`).
///
/// Apple takes a token for an hour and answers 429 `TooManyProviderTokenUpdates` to one renewed more
/// often than every 20 minutes. So a token is reused until it is ``renewAfter`` old (50 minutes by
/// default, at least 20 and under 60), on the sender's clock, and never renewed sooner than 20
/// minutes: on 403 `ExpiredProviderToken` (``expired(_:now:)``) a token at least that old is renewed,
/// and a younger one means this machine's clock and Apple's disagree — no renewal can help.
final class APNsProviderToken: Sendable {
    /// The youngest token that may be renewed: 20 minutes.
    static let minimumAge: Int64 = 20 * 60
    /// Apple's limit: a token older than an hour is refused.
    static let lifetime: Int64 = 60 * 60

    let key: APNsSigningKey
    /// Seconds after which the next request gets a new token.
    let renewAfter: Int64
    private let current = Mutex<(token: String, issuedAt: Int64)?>(nil)
    private let signed = Atomic<Int>(0)

    /// `renewAfter`: at least ``minimumAge``, under ``lifetime``.
    init(key: APNsSigningKey, renewAfter: Int64 = 50 * 60) throws(SenderError) {
        guard (Self.minimumAge..<Self.lifetime).contains(renewAfter) else {
            throw SenderError(.configuration, "the APNs provider token is renewed after \(renewAfter) s: it must be at least 1200 (20 minutes) and under 3600 (an hour)")
        }
        self.key = key
        self.renewAfter = renewAfter
    }

    /// Tokens signed so far.
    var issued: Int { signed.load(ordering: .relaxed) }

    /// The token for a request at `now` (Unix seconds): the current one until it is ``renewAfter``
    /// old, then a new one. A clock that went back keeps the current one.
    func token(now: Int64) -> String {
        current.withLock { current in
            if let current, now - current.issuedAt < renewAfter { return current.token }
            return renew(&current, now: now)
        }
    }

    /// APNs answered 403 `ExpiredProviderToken` to `token` at `now`: the token to try again with (a
    /// newer one already made by another request, or a new one when `token` is at least 20 minutes
    /// old); a younger one throws: the clocks disagree.
    func expired(_ token: String, now: Int64) throws(SenderError) -> String {
        let renewed: String? = current.withLock { current in
            guard let held = current, held.token == token else { return current?.token }
            guard now - held.issuedAt >= Self.minimumAge else { return nil }
            return renew(&current, now: now)
        }
        guard let renewed else {
            throw SenderError(
                .configuration,
                "APNs answered ExpiredProviderToken to a provider token this machine issued less than 20 minutes ago: its clock is likely off from Apple's (check NTP); renewing sooner would be refused (TooManyProviderTokenUpdates); leases released, nothing more sent")
        }
        return renewed
    }

    /// Signs a token issued at `now`.
    private func renew(_ current: inout (token: String, issuedAt: Int64)?, now: Int64) -> String {
        let token = Self.sign(key: key, issuedAt: now)
        current = (token, now)
        signed.add(1, ordering: .relaxed)
        return token
    }

    /// `header.claims.signature` (the signature: r and s, 32 bytes each, base64url).
    static func sign(key: APNsSigningKey, issuedAt: Int64) -> String {
        var header = JSONWriter(capacity: 48)
        header.beginObject()
        header.field("alg", "ES256")
        header.field("kid", key.keyID)
        header.endObject()
        var claims = JSONWriter(capacity: 48)
        claims.beginObject()
        claims.field("iss", key.teamID)
        claims.field("iat", Int(issuedAt))
        claims.endObject()
        let signingInput = Base64URL.encode(header.bytes) + "." + Base64URL.encode(claims.bytes)
        // P-256 signing fails only on a broken key, which the key's init refused.
        let signature = try! key.key.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }
}
