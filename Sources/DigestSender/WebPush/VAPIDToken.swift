import Crypto
import DigestCore
import Foundation
import Synchronization

/// VAPID (RFC 8292): the `Authorization: vapid t=<JWT>, k=<public key>` header of a push request.
/// The JWT is ES256, header `{"typ":"JWT","alg":"ES256"}`, claims `aud` (the push service's origin,
/// `https://host[:port]`), `exp` (at most 24 hours ahead) and `sub` (a `mailto:` or `https:`
/// contact for the push service's operator).
///
/// One token per origin, shared by every request there (a `Mutex`), reused while more than
/// ``minimumValidity`` (an hour) of it is left and then signed anew: signing is an ECDSA signature,
/// and push services cache what they verified. At most ``limit`` tokens are held. Time is the
/// caller's (`now:`, Unix seconds).
final class VAPIDToken: Sendable {
    /// A token with less left than this is not handed out again: an hour.
    static let minimumValidity: Int64 = 60 * 60
    /// RFC 8292 §2: `exp` no more than 24 hours after the request.
    static let maximumLifetime: Int64 = 24 * 60 * 60

    let key: VAPIDKey
    /// The `sub` claim.
    let subject: String
    /// Seconds from signing to `exp`.
    let lifetime: Int64
    /// The most tokens held: origins come from subscribers' endpoints, and the sender keeps
    /// ``WebPushOrigins/defaultLimit`` of them; past this the one signed first is dropped.
    let limit: Int
    private let tokens = Mutex<[String: (header: String, expires: Int64)]>([:])
    private let signed = Atomic<Int>(0)

    /// `subject`: `mailto:` or `https:`, not `…@localhost`; `lifetime`: over 2 hours (so a token
    /// serves at least an hour) and at most 24; 12 hours by default.
    init(key: VAPIDKey, subject: String, lifetime: Int64 = 12 * 60 * 60, limit: Int = 4 * WebPushOrigins.defaultLimit) throws(SenderError) {
        try Self.check(subject: subject)
        guard (2 * Self.minimumValidity...Self.maximumLifetime).contains(lifetime) else {
            throw SenderError(.configuration, "a VAPID token's lifetime is \(lifetime) s: it must be at least 7200 (2 hours) and at most 86400 (24 hours)")
        }
        self.key = key
        self.subject = subject
        self.lifetime = lifetime
        self.limit = max(1, limit)
    }

    /// Tokens signed so far.
    var issued: Int { signed.load(ordering: .relaxed) }

    /// Tokens held now.
    var held: Int { tokens.withLock { $0.count } }

    /// The `Authorization` value for a request to `origin` (see ``origin(of:)``) at `now`: the
    /// origin's token while more than an hour of it is left (and its `exp` at most 24 hours ahead,
    /// should the clock have gone back), else a new one.
    func authorization(origin: String, now: Int64) -> String {
        token(origin: origin, now: now) { expires in expires - now > Self.minimumValidity }
    }

    /// A token signed this recently counts as fresh: a refusal of it is a refusal of the key.
    static let freshness: Int64 = 5 * 60

    /// The `Authorization` value for `origin` signed within ``freshness`` of `now`: the held one if it
    /// is, else a new one (which replaces it). After a push service refused a request (401, 403), the
    /// request is tried once more with this: a refusal then is about the key, not an old token.
    func freshAuthorization(origin: String, now: Int64) -> String {
        token(origin: origin, now: now) { expires in expires - lifetime >= now - Self.freshness }
    }

    /// The held token for `origin` when `reusable` accepts its `exp` (and that is at most 24 hours
    /// ahead, should the clock have gone back), else a new one, held from then on; tokens with an
    /// hour or less left are dropped meanwhile.
    private func token(origin: String, now: Int64, reusable: (Int64) -> Bool) -> String {
        tokens.withLock { tokens in
            if let held = tokens[origin], reusable(held.expires), held.expires - now <= Self.maximumLifetime {
                return held.header
            }
            tokens = tokens.filter { $0.value.expires - now > Self.minimumValidity }
            if tokens[origin] == nil, tokens.count >= limit, let first = tokens.min(by: { $0.value.expires < $1.value.expires }) {
                tokens.removeValue(forKey: first.key)
            }
            let expires = now + lifetime
            let header = "vapid t=\(Self.sign(key: key, audience: origin, subject: subject, expires: expires)), k=\(key.publicKey)"
            tokens[origin] = (header, expires)
            signed.add(1, ordering: .relaxed)
            return header
        }
    }

    /// `header.claims.signature` (the signature: r and s, 32 bytes each, base64url).
    static func sign(key: VAPIDKey, audience: String, subject: String, expires: Int64) -> String {
        var header = JSONWriter(capacity: 32)
        header.beginObject()
        header.field("typ", "JWT")
        header.field("alg", "ES256")
        header.endObject()
        var claims = JSONWriter(capacity: 128)
        claims.beginObject()
        claims.field("aud", audience)
        claims.field("exp", Int(expires))
        claims.field("sub", subject)
        claims.endObject()
        let signingInput = Base64URL.encode(header.bytes) + "." + Base64URL.encode(claims.bytes)
        // P-256 signing fails only on a broken key, which the key's init refused.
        let signature = try! key.key.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    /// The origin of a push endpoint, the JWT's `aud`: `https://host`, with `:port` when it is not
    /// 443; the host lower-cased, an IPv6 address in brackets. Throws for anything but an `https`
    /// URL with a host (the message names the scheme, never the endpoint).
    static func origin(of endpoint: String) throws(WebPushError) -> String {
        try WebPushEndpoint(endpoint).origin
    }

    /// RFC 8292 §2.1: a `mailto:` address or an `https:` URL; Apple's push service refuses a
    /// `mailto:` at `localhost`, so it is refused here, where it is found at start-up.
    static func check(subject: String) throws(SenderError) {
        let lower = subject.lowercased()
        if lower.hasPrefix("mailto:") {
            let address = lower.dropFirst("mailto:".count)
            guard let at = address.lastIndex(of: "@"), at != address.startIndex, address.index(after: at) != address.endIndex else {
                throw SenderError(.configuration, "the VAPID subject \"\(subject)\" is not a mailto: address (mailto:NAME@DOMAIN)")
            }
            guard !lower.hasSuffix("@localhost") else {
                throw SenderError(.configuration, "the VAPID subject \"\(subject)\" is an address at localhost: Apple's push service refuses it; give a contact the push services can reach")
            }
        } else if lower.hasPrefix("https:") {
            guard let url = URLComponents(string: subject), let host = url.host, !host.isEmpty else {
                throw SenderError(.configuration, "the VAPID subject \"\(subject)\" is not an https URL with a host")
            }
        } else {
            throw SenderError(.configuration, "the VAPID subject \"\(subject)\" is neither a mailto: address nor an https: URL (RFC 8292: the push service's operators contact you there)")
        }
        guard !subject.utf8.contains(where: { $0 < 0x21 || $0 == 0x7F }) else {
            throw SenderError(.configuration, "the VAPID subject contains spaces or control characters")
        }
    }
}
