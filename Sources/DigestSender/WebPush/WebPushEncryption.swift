package import Crypto
package import DigestCore
import Foundation  // Data.withUnsafeBytes: the sealed box's parts

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
            let scalar = [UInt8](unsafeUninitializedCapacity: 32) { buffer, count in
                for word in 0..<4 { withUnsafeBytes(of: random.next() as UInt64) { buffer[(word * 8)..<(word * 8 + 8)].initialize(fromContentsOf: $0) } }
                count = 32
            }
            if let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: scalar) { return key }
        }
    }

    /// The HKDF `info` of the input keying material (RFC 8291 §3.3), before the two public keys.
    static let keyInfo = Array("WebPush: info\0".utf8)
    /// The `info` of the content key and of the nonce (RFC 8188 §2.2, 2.3), each with expand's
    /// first block counter.
    static let contentKeyInfo = Array("Content-Encoding: aes128gcm\0\u{1}".utf8)
    static let nonceInfo = Array("Content-Encoding: nonce\0\u{1}".utf8)

    /// HMAC-SHA-256 (RFC 2104) of `parts`, one after the other, under `key`: at most a block (64
    /// bytes), as every key here is (16 or 32). swift-crypto's `HKDF` and `HMAC` take generic byte
    /// collections and a key object each call; five HMACs a message through them cost more than the
    /// AES-GCM sealing.
    static func hmac(key: [UInt8], _ parts: [UInt8]...) -> [UInt8] {
        precondition(key.count <= 64, "an HMAC key of this protocol is at most one SHA-256 block")
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { pad in
            _ = pad.initialize(repeating: 0x36)
            for (index, byte) in key.enumerated() { pad[index] ^= byte }
            var inner = SHA256()
            inner.update(bufferPointer: UnsafeRawBufferPointer(pad))
            for part in parts { part.withUnsafeBytes { inner.update(bufferPointer: $0) } }
            let innerDigest = inner.finalize()
            for index in 0..<64 { pad[index] ^= 0x36 ^ 0x5C }
            var outer = SHA256()
            outer.update(bufferPointer: UnsafeRawBufferPointer(pad))
            innerDigest.withUnsafeBytes { outer.update(bufferPointer: $0) }
            return outer.finalize().withUnsafeBytes { Array($0) }
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
        let salt = salt ?? [UInt8](unsafeUninitializedCapacity: 16) { buffer, count in
            var random = SystemRandomNumberGenerator()
            for half in 0..<2 { withUnsafeBytes(of: random.next() as UInt64) { buffer[(half * 8)..<(half * 8 + 8)].initialize(fromContentsOf: $0) } }
            count = 16
        }
        precondition(salt.count == 16, "an aes128gcm salt is 16 bytes")
        let ephemeral = ephemeralKey ?? Self.ephemeralKey()
        let asPublic = Array(ephemeral.publicKey.x963Representation)

        // The key agreement fails only on a point off the curve, which the keys' init refused.
        let secret = try! ephemeral.sharedSecretFromKeyAgreement(with: keys.publicKey).withUnsafeBytes { Array($0) }
        // HKDF (RFC 5869) spelled out in its HMACs: each output here is one block (at most 32 bytes),
        // so expand is one HMAC of `info ‖ 0x01`; the content key and the nonce share one extract.
        let ikm = hmac(key: hmac(key: keys.auth, secret), Self.keyInfo, keys.point, asPublic, [0x01])
        let prk = hmac(key: salt, ikm)
        let cek = hmac(key: prk, Self.contentKeyInfo)
        let nonce = hmac(key: prk, Self.nonceInfo)

        var record = plaintext
        record.append(0x02)
        // Sealing fails only on a nonce of the wrong size: it is 12 bytes.
        let sealed = try! AES.GCM.seal(
            record, using: SymmetricKey(data: cek[..<16]), nonce: try! AES.GCM.Nonce(data: nonce[..<12]))

        return [UInt8](unsafeUninitializedCapacity: headerBytes + record.count + 16) { buffer, count in
            func append(_ bytes: UnsafeRawBufferPointer) {
                buffer[count..<(count + bytes.count)].initialize(fromContentsOf: bytes)
                count += bytes.count
            }
            salt.withUnsafeBytes(append)
            withUnsafeBytes(of: recordSize.bigEndian, append)
            withUnsafeBytes(of: UInt8(asPublic.count), append)
            asPublic.withUnsafeBytes(append)
            sealed.ciphertext.withUnsafeBytes(append)
            sealed.tag.withUnsafeBytes(append)
        }
    }
}
