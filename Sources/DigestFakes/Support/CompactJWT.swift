import Crypto
import Foundation

/// A JSON Web Token in compact form (`header.claims.signature`, each part base64url), as the fakes
/// read them: FCM's OAuth assertions (RS256), APNs's provider tokens and Web Push's VAPID tokens
/// (ES256). Which algorithm, key and claims it must have is the caller's to check.
struct CompactJWT {
    /// The header's fields the fakes look at.
    struct Header: Decodable {
        var alg: String
        var kid: String?
        var typ: String?
    }

    let header: Header
    /// The claims' JSON bytes.
    let claims: [UInt8]
    let signature: [UInt8]
    /// What the signature signs: the first two parts as sent.
    let signed: [UInt8]

    /// Nil when `text` is not three base64url parts with a JSON header naming its `alg`.
    init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Self.base64URL(parts[0]), let claims = Self.base64URL(parts[1]),
              let signature = Self.base64URL(parts[2]), let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes))
        else { return nil }
        self.header = header
        self.claims = claims
        self.signature = signature
        self.signed = Array("\(parts[0]).\(parts[1])".utf8)
    }

    /// Whether it is ES256 and signed by `key`.
    func isES256(signedBy key: P256.Signing.PublicKey) -> Bool {
        guard header.alg == "ES256", signature.count == 64, let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else {
            return false
        }
        return key.isValidSignature(ecdsa, for: signed)
    }

    /// The claims decoded as `type`; nil when they are not such JSON.
    func claims<Claims: Decodable>(as type: Claims.Type) -> Claims? { try? JSONDecoder().decode(type, from: Data(claims)) }

    /// The bytes of base64url `text` (padded or not); nil when it is not base64.
    static func base64URL(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }
}
