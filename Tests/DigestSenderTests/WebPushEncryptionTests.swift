import Crypto
import DigestCore
import DigestTesting
import Foundation
import Testing

@testable import DigestSender

/// RFC 8291 message encryption (`aes128gcm`): the RFC's worked example to the byte, round trips
/// through the fakes' decryption (written apart), the one-record size limit, and the subscription
/// keys' checks.
@Suite struct WebPushEncryptionTests {
    /// RFC 8291, Appendix A: the application server's ephemeral key, the user agent's key pair and
    /// auth secret, the salt, and the whole body they give (base64url).
    enum RFC8291 {
        static let plaintext = "When I grow up, I want to be a watermelon"
        static let asPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
        static let asPublic = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
        static let uaPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        static let uaPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
        static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
        static let body =
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
    }

    static func bytes(_ base64url: String) throws -> [UInt8] { try #require(Base64URL.decode(base64url)) }

    /// A subscriber: its key pair and auth secret, and the keys a sender holds.
    struct Subscriber {
        let privateKey = P256.KeyAgreement.PrivateKey()
        let auth = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        var keys: WebPushSubscriptionKeys {
            get throws {
                try WebPushSubscriptionKeys(p256dh: Base64URL.encode(Array(privateKey.publicKey.x963Representation)), auth: Base64URL.encode(auth))
            }
        }
        func decrypt(_ body: [UInt8]) throws -> [UInt8] { try WebPushDecryption.decrypt(body, privateKey: privateKey, auth: auth) }
    }

    @Test func theRFC8291ExampleEncryptsToTheRFCsExactBytes() throws {
        let ephemeral = try P256.KeyAgreement.PrivateKey(rawRepresentation: try Self.bytes(RFC8291.asPrivate))
        #expect(Base64URL.encode(Array(ephemeral.publicKey.x963Representation)) == RFC8291.asPublic)
        let keys = try WebPushSubscriptionKeys(p256dh: RFC8291.uaPublic, auth: RFC8291.auth)
        let body = try WebPushEncryption.encrypt(
            Array(RFC8291.plaintext.utf8), to: keys, salt: try Self.bytes(RFC8291.salt), ephemeralKey: ephemeral)
        #expect(body == (try Self.bytes(RFC8291.body)))
        #expect(Base64URL.encode(body) == RFC8291.body)
    }

    @Test func theRFC8291BodyDecryptsWithTheUserAgentsKey() throws {
        let ua = try P256.KeyAgreement.PrivateKey(rawRepresentation: try Self.bytes(RFC8291.uaPrivate))
        #expect(Base64URL.encode(Array(ua.publicKey.x963Representation)) == RFC8291.uaPublic)
        let plaintext = try WebPushDecryption.decrypt(try Self.bytes(RFC8291.body), privateKey: ua, auth: try Self.bytes(RFC8291.auth))
        #expect(String(decoding: plaintext, as: UTF8.self) == RFC8291.plaintext)
    }

    @Test(arguments: [0, 1, 41, 1000, 3993])
    func whatIsEncryptedDecryptsWithTheSubscribersKey(size: Int) throws {
        let subscriber = Subscriber()
        var random = SplitMix64(seed: UInt64(size))
        let plaintext = (0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        let body = try WebPushEncryption.encrypt(plaintext, to: try subscriber.keys)
        #expect(body.count == 86 + size + 1 + 16)
        #expect(Array(body[16..<21]) == [0x00, 0x00, 0x10, 0x00, 65])  // rs 4096, idlen 65
        #expect(try subscriber.decrypt(body) == plaintext)
        // A fresh salt and key each time: the same plaintext never gives the same body.
        let again = try WebPushEncryption.encrypt(plaintext, to: try subscriber.keys)
        #expect(again[0..<16] != body[0..<16] && again[21..<86] != body[21..<86])
        #expect(try subscriber.decrypt(again) == plaintext)
    }

    @Test func anotherSubscriberOrAnAlteredBodyDoesNotDecrypt() throws {
        let subscriber = Subscriber(), other = Subscriber()
        let body = try WebPushEncryption.encrypt(Array("hello".utf8), to: try subscriber.keys)
        #expect(throws: WebPushDecryption.Failure.self) { try other.decrypt(body) }
        #expect(throws: WebPushDecryption.Failure.self) {
            try WebPushDecryption.decrypt(body, privateKey: subscriber.privateKey, auth: other.auth)
        }
        for index in [0, 30, 90, body.count - 1] {
            var altered = body
            altered[index] ^= 0x01
            #expect(throws: WebPushDecryption.Failure.self, "byte \(index)") { try subscriber.decrypt(altered) }
        }
    }

    @Test func thePlaintextFitsOneRecordOf4096Bytes() throws {
        let subscriber = Subscriber()
        #expect(WebPushEncryption.maxPlaintextBytes == 3993)
        let largest = [UInt8](repeating: 0x61, count: 3993)
        let body = try WebPushEncryption.encrypt(largest, to: try subscriber.keys)
        #expect(body.count == 4096)
        #expect(try subscriber.decrypt(body) == largest)
        #expect {
            _ = try WebPushEncryption.encrypt(largest + [0x61], to: try subscriber.keys)
        } throws: { error in
            let error = error as? WebPushError
            return error?.code == .payloadTooLarge && error?.message.contains("3994 bytes") == true && error?.message.contains("3993") == true
        }
    }

    /// For scripts/webpush-crosscheck.py only: with `DIGEST_WEBPUSH_SAMPLES=FILE` set, writes bodies
    /// encrypted here with their receivers' keys (JSON lines, base64url) for another library to decrypt;
    /// skipped otherwise.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["DIGEST_WEBPUSH_SAMPLES"]?.isEmpty == false, "only for scripts/webpush-crosscheck.py"))
    func samplesForTheCrossCheck() throws {
        let path = ProcessInfo.processInfo.environment["DIGEST_WEBPUSH_SAMPLES"] ?? ""
        var lines: [String] = []
        for size in [0, 1, 41, 1000, 3993] {
            let subscriber = Subscriber()
            let plaintext = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let body = try WebPushEncryption.encrypt(plaintext, to: try subscriber.keys)
            lines.append(
                #"{"private":"\#(Base64URL.encode(Array(subscriber.privateKey.rawRepresentation)))","auth":"\#(Base64URL.encode(subscriber.auth))","plaintext":"\#(Base64URL.encode(plaintext))","body":"\#(Base64URL.encode(body))"}"#)
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    static let goodPoint = Base64URL.encode(Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation))
    static let goodAuth = Base64URL.encode([UInt8](repeating: 7, count: 16))

    /// Each bad key and what its error says.
    static let badKeys: [(p256dh: String, auth: String, says: String)] = [
        ("not*base64", goodAuth, "p256dh key is not base64url"),
        (Base64URL.encode([UInt8](repeating: 4, count: 64)), goodAuth, "p256dh key is 64 bytes"),
        (Base64URL.encode(Array(P256.KeyAgreement.PrivateKey().publicKey.compressedRepresentation)), goodAuth, "p256dh key is 33 bytes"),
        (Base64URL.encode([0x05] + [UInt8](repeating: 1, count: 64)), goodAuth, "65 bytes not starting with 0x04"),
        (Base64URL.encode([0x04] + [UInt8](repeating: 0, count: 64)), goodAuth, "not a point on the P-256 curve"),
        (Base64URL.encode([0x04] + [UInt8](repeating: 0xFF, count: 64)), goodAuth, "not a point on the P-256 curve"),
        (goodPoint, "not*base64", "auth secret is not base64url"),
        (goodPoint, Base64URL.encode([UInt8](repeating: 7, count: 15)), "auth secret is 15 bytes"),
        (goodPoint, Base64URL.encode([UInt8](repeating: 7, count: 32)), "auth secret is 32 bytes"),
        (goodPoint, "", "auth secret is 0 bytes"),
    ]

    @Test(arguments: badKeys.indices)
    func badSubscriptionKeysAreRefusedWithTheirReason(index: Int) throws {
        let (p256dh, auth, says) = Self.badKeys[index]
        #expect {
            _ = try WebPushSubscriptionKeys(p256dh: p256dh, auth: auth)
        } throws: { error in
            let error = error as? WebPushSubscriptionKeys.Invalid
            return error?.message.contains(says) == true
                && (p256dh.count < 8 || error?.message.contains(p256dh) == false) && (auth.count < 8 || error?.message.contains(auth) == false)
        }
        // Padded base64url (and standard base64) is accepted like the browsers' unpadded form.
        _ = try WebPushSubscriptionKeys(p256dh: Self.goodPoint + "=", auth: Self.goodAuth + "==")
    }
}
