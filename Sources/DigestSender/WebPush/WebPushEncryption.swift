package import Crypto
package import DigestCore

/// Message encryption for Web Push (RFC 8291) in the `aes128gcm` content coding (RFC 8188): the body
/// of a push request, readable only by the subscription's browser.
///
/// A fresh P-256 key and a fresh 16-byte salt for every message (and every try of it): the key
/// agreement with the subscription's `p256dh` gives the ECDH secret, and
///
///     IKM   = HKDF-SHA-256(salt: auth, ikm: ECDH secret, info: "WebPush: info" 0x00 ‖ ua_public ‖ as_public, 32)
///     CEK   = HKDF-SHA-256(salt: salt, ikm: IKM, info: "Content-Encoding: aes128gcm" 0x00, 16)
///     NONCE = HKDF-SHA-256(salt: salt, ikm: IKM, info: "Content-Encoding: nonce" 0x00, 12)
///
/// The body is one record: the header `salt(16) ‖ rs(4, big-endian 4096) ‖ idlen(1) = 65 ‖ as_public(65)`,
/// then AES-128-GCM of `plaintext ‖ 0x02` (the last record's delimiter) with its 16-byte tag. Push
/// services take at most 4096 bytes of body, so the plaintext is at most
/// ``maxPlaintextBytes`` = 4096 − 86 (header) − 16 (tag) − 1 (delimiter) = 3993 bytes.
package enum WebPushEncryption {
    /// The record size written in the header.
    static let recordSize: UInt32 = 4096
    /// `salt ‖ rs ‖ idlen ‖ keyid`.
    package static let headerBytes = 16 + 4 + 1 + 65
    /// The largest body a push service must accept (RFC 8030 §7.2).
    package static let maxBodyBytes = 4096
    /// A new key pair for one message: a uniformly random scalar (32 bytes from the system's generator,
    /// drawn again in the rare case it is not below the curve's order) and its public point.
    /// `P256.KeyAgreement.PrivateKey()` makes the same kind of key but runs FIPS's pairwise
    /// consistency test (an ECDSA signature and its verification) on each and, for a compact
    /// representation this protocol does not use, throws away about half of the keys it makes: four
    /// times the elliptic-curve work of a message's key agreement, measured as most of the sender's
    /// time a Web Push message.
    static func ephemeralKey() -> P256.KeyAgreement.PrivateKey {
        var random = SystemRandomNumberGenerator()
        while true {
            let scalar = (0..<4).flatMap { _ in withUnsafeBytes(of: random.next() as UInt64) { Array($0) } }
            if let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: scalar) { return key }
        }
    }

    /// The largest plaintext that fits: 3993 bytes.
    package static let maxPlaintextBytes = maxBodyBytes - headerBytes - 16 - 1

    /// The request body carrying `plaintext` to the subscription with `keys`. `salt` (16 bytes) and
    /// `ephemeralKey` are drawn fresh unless given, which only tests of fixed vectors do. Throws
    /// ``WebPushError/Code/payloadTooLarge`` past ``maxPlaintextBytes``.
    package static func encrypt(
        _ plaintext: [UInt8], to keys: WebPushSubscriptionKeys, salt: [UInt8]? = nil,
        ephemeralKey: P256.KeyAgreement.PrivateKey? = nil
    ) throws(WebPushError) -> [UInt8] {
        guard plaintext.count <= maxPlaintextBytes else {
            throw WebPushError(
                .payloadTooLarge,
                "the Web Push plaintext is \(plaintext.count) bytes: one aes128gcm record of 4096 bytes holds at most \(maxPlaintextBytes)")
        }
        let salt = salt ?? SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        precondition(salt.count == 16, "an aes128gcm salt is 16 bytes")
        let ephemeral = ephemeralKey ?? Self.ephemeralKey()
        let asPublic = Array(ephemeral.publicKey.x963Representation)

        // The key agreement fails only on a point off the curve, which the keys' init refused.
        let secret = try! ephemeral.sharedSecretFromKeyAgreement(with: keys.publicKey)
        let ikm = secret.withUnsafeBytes { shared in
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: shared), salt: keys.auth,
                info: Array("WebPush: info\0".utf8) + keys.point + asPublic, outputByteCount: 32)
        }
        // The content key and the nonce share one extract (RFC 5869: PRK = HMAC(salt, IKM)).
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: ikm, salt: salt)
        let cek = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("Content-Encoding: aes128gcm\0".utf8), outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("Content-Encoding: nonce\0".utf8), outputByteCount: 12)

        var record = plaintext
        record.append(0x02)
        // Sealing fails only on a nonce of the wrong size: it is 12 bytes.
        let sealed = try! AES.GCM.seal(
            record, using: cek, nonce: nonce.withUnsafeBytes { try! AES.GCM.Nonce(data: $0) })

        var body = [UInt8]()
        body.reserveCapacity(headerBytes + record.count + 16)
        body += salt
        withUnsafeBytes(of: recordSize.bigEndian) { body += $0 }
        body.append(UInt8(asPublic.count))
        body += asPublic
        body += sealed.ciphertext
        body += sealed.tag
        return body
    }
}
