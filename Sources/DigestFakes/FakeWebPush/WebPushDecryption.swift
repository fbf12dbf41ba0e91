package import Crypto

/// The browser's side of RFC 8291 (`aes128gcm`, RFC 8188): the plaintext of a push request's body,
/// with the subscription's private key and auth secret. Written apart from the sender's encryption
/// (nothing shared but swift-crypto), so that a round trip checks one against the other; the fake
/// push service decrypts with it.
package enum WebPushDecryption {
    /// Why a body does not decrypt.
    package struct Failure: Error, Equatable, CustomStringConvertible {
        package var reason: String
        init(_ reason: String) { self.reason = reason }
        package var description: String { reason }
    }

    /// The plaintext of `body`, sent to the subscription whose key pair is `privateKey` and whose
    /// secret is `auth`. The body must be one record (the only one, delimiter 0x02), padding allowed.
    package static func decrypt(_ body: [UInt8], privateKey: P256.KeyAgreement.PrivateKey, auth: [UInt8]) throws(Failure) -> [UInt8] {
        guard body.count >= 21 else { throw Failure("the body is \(body.count) bytes: shorter than an aes128gcm header") }
        let salt = Array(body[0..<16])
        let rs = body[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let idlen = Int(body[20])
        guard rs >= 18 else { throw Failure("the record size is \(rs): at least 18") }
        guard idlen == 65, body.count >= 21 + idlen else { throw Failure("the key id is \(idlen) bytes: RFC 8291 puts the sender's 65-byte public key there") }
        let asPublic = Array(body[21..<86])
        let record = body[86...]
        guard record.count >= 17 else { throw Failure("the record is \(record.count) bytes: shorter than a tag and a delimiter") }
        guard record.count <= rs else { throw Failure("the body holds more than one record of \(rs) bytes: a push message is one record") }
        let sender: P256.KeyAgreement.PublicKey
        do { sender = try P256.KeyAgreement.PublicKey(x963Representation: asPublic) } catch {
            throw Failure("the key id is not a P-256 point")
        }
        let secret: SharedSecret
        do { secret = try privateKey.sharedSecretFromKeyAgreement(with: sender) } catch { throw Failure("the key agreement failed") }

        let uaPublic = Array(privateKey.publicKey.x963Representation)
        let prk = secret.withUnsafeBytes { HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: $0), salt: auth) }
        let ikm = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: Array("WebPush: info\0".utf8) + uaPublic + asPublic, outputByteCount: 32)
        let prk2 = HKDF<SHA256>.extract(inputKeyMaterial: ikm, salt: salt)
        let cek = HKDF<SHA256>.expand(pseudoRandomKey: prk2, info: Array("Content-Encoding: aes128gcm\0".utf8), outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk2, info: Array("Content-Encoding: nonce\0".utf8), outputByteCount: 12)

        var padded: [UInt8]
        do {
            let box = try AES.GCM.SealedBox(
                nonce: nonce.withUnsafeBytes { try AES.GCM.Nonce(data: $0) }, ciphertext: record.dropLast(16), tag: record.suffix(16))
            padded = Array(try AES.GCM.open(box, using: cek))
        } catch {
            throw Failure("the record does not decrypt (wrong key or auth secret, or altered)")
        }
        while padded.last == 0 { padded.removeLast() }
        guard padded.last == 0x02 else {
            throw Failure(padded.last == 0x01 ? "the record's delimiter is 0x01: not the last record" : "the record has no delimiter")
        }
        padded.removeLast()
        return padded
    }
}
