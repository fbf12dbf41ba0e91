import Crypto
import Foundation

/// The checks a push service makes of a request (RFC 8030 §5, RFC 8292), without state: the fake
/// push service's rules.
enum WebPushRequestRules {
    /// Why a request is refused.
    struct Refusal: Error, Equatable {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// The headers: `Content-Encoding: aes128gcm` (RFC 8291), `TTL` whole seconds (required),
    /// `Urgency` one of RFC 8030's four, `Topic` 1 to 32 base64url characters. A refusal is `400`.
    static func check(contentEncoding: String?, ttl: String?, urgency: String?, topic: String?) -> (Int, String)? {
        guard contentEncoding?.lowercased() == "aes128gcm" else { return (400, "Content-Encoding must be aes128gcm") }
        guard let ttl, !ttl.isEmpty, ttl.utf8.allSatisfy({ (0x30...0x39).contains($0) }), ttl.utf8.count <= 10 else {
            return (400, "TTL must be given as whole seconds")
        }
        if let urgency, !["very-low", "low", "normal", "high"].contains(urgency) { return (400, "Urgency must be very-low, low, normal or high") }
        if let topic {
            let alphabet = topic.utf8.allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F }
            guard alphabet, (1...32).contains(topic.utf8.count) else { return (400, "Topic must be 1 to 32 characters of the URL-safe base64 alphabet") }
        }
        return nil
    }

    /// `t` and `k` of `vapid t=<JWT>, k=<key>` (either order, spaces or tabs allowed around each
    /// part; the scheme in any case). Read byte by byte: Foundation's `trimmingCharacters` on the
    /// long header was most of the fake's time a request.
    static func vapidParameters(_ authorization: String) -> (token: String, key: String)? {
        func trimmed(_ bytes: Substring.UTF8View) -> Substring.UTF8View {
            let blank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
            guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) }) else { return bytes[bytes.endIndex...] }
            return bytes[first...last]
        }
        let header = trimmed(Substring(authorization).utf8)
        let scheme = "vapid ".utf8
        guard header.count > scheme.count, zip(header, scheme).allSatisfy({ ((0x41...0x5A).contains($0) ? $0 | 0x20 : $0) == $1 }) else { return nil }
        var token: Substring?, key: Substring?
        for part in header.dropFirst(scheme.count).split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            let pair = trimmed(part)
            guard pair.count > 2, pair[pair.index(after: pair.startIndex)] == UInt8(ascii: "=") else { continue }
            let value = Substring(pair.dropFirst(2))
            switch pair.first {
            case UInt8(ascii: "t"): token = value
            case UInt8(ascii: "k"): key = value
            default: continue
            }
        }
        guard let token, let key else { return nil }
        return (String(token), String(key))
    }

    /// The JWT's `exp` when it is ES256 with header `{"typ":"JWT","alg":"ES256"}`, signed by `key`
    /// (base64url of an uncompressed P-256 point), `aud` is `audience` and `sub` a `mailto:` or
    /// `https:` URL; nil otherwise.
    static func verify(jwt: String, key: String, audience: String) -> Int64? {
        guard let token = CompactJWT(jwt), token.header.typ == "JWT",
              let keyBytes = CompactJWT.base64URL(Substring(key)), keyBytes.count == 65,
              let publicKey = try? P256.Signing.PublicKey(x963Representation: keyBytes), token.isES256(signedBy: publicKey),
              let claims = token.claims(as: Claims.self), claims.aud == audience,
              claims.sub.hasPrefix("mailto:") || claims.sub.hasPrefix("https:")
        else { return nil }
        return claims.exp
    }

    private struct Claims: Decodable {
        var aud: String
        var exp: Int64
        var sub: String
    }
}
