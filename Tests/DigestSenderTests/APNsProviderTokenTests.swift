import Crypto
import DigestCore
import DigestTesting
import Foundation
import Testing

@testable import DigestSender

/// The APNs key and provider token, without I/O: the key file's checks, the JWT, and renewal on an
/// injected clock (never sooner than 20 minutes).
@Suite struct APNsProviderTokenTests {
    static let t0: Int64 = 1_800_000_000

    static func key() throws -> APNsSigningKey {
        try APNsSigningKey(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "ABCDE12345", teamID: "TEAM123456")
    }

    static func json(_ part: Substring) throws -> [String: Any] {
        let bytes = try #require(Base64URL.decode(part))
        return try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test func theTokenIsAnES256JWTWithKidIssAndIat() throws {
        let signing = P256.Signing.PrivateKey()
        let key = try APNsSigningKey(pem: signing.pemRepresentation, keyID: "ABCDE12345", teamID: "TEAM123456")
        let token = APNsProviderToken.sign(key: key, issuedAt: Self.t0)
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        let header = try Self.json(parts[0]), claims = try Self.json(parts[1])
        #expect(header.count == 2 && header["alg"] as? String == "ES256" && header["kid"] as? String == "ABCDE12345")
        #expect(claims.count == 2 && claims["iss"] as? String == "TEAM123456" && (claims["iat"] as? NSNumber)?.int64Value == Self.t0)
        let signature = try #require(Base64URL.decode(parts[2]))
        #expect(signature.count == 64)
        let valid = signing.publicKey.isValidSignature(
            try P256.Signing.ECDSASignature(rawRepresentation: signature), for: Array("\(parts[0]).\(parts[1])".utf8))
        #expect(valid)
    }

    @Test func aTokenIsReusedUntilItsRenewalAgeAndShared() throws {
        let tokens = try APNsProviderToken(key: try Self.key())
        let first = tokens.token(now: Self.t0)
        #expect(tokens.token(now: Self.t0 + 50 * 60 - 1) == first)
        #expect(tokens.token(now: Self.t0 - 600) == first)  // a clock that went back keeps it
        let second = tokens.token(now: Self.t0 + 50 * 60)
        #expect(second != first && tokens.issued == 2)
    }

    @Test func expiredProviderTokenRenewsAnOldTokenAndStopsOnAYoungOne() throws {
        let tokens = try APNsProviderToken(key: try Self.key())
        let first = tokens.token(now: Self.t0)
        #expect {
            _ = try tokens.expired(first, now: Self.t0 + 20 * 60 - 1)
        } throws: { error in
            (error as? SenderError)?.code == .configuration && "\(error)".contains("clock")
        }
        let renewed = try tokens.expired(first, now: Self.t0 + 20 * 60)
        #expect(renewed != first && tokens.issued == 2)
        // Another request that held the old token gets the new one: no second renewal.
        #expect(try tokens.expired(first, now: Self.t0 + 20 * 60 + 5) == renewed && tokens.issued == 2)
        #expect(tokens.token(now: Self.t0 + 21 * 60) == renewed)
    }

    /// Whatever the clock and the answers do, two tokens are issued at least 20 minutes apart.
    @Test func neverRenewedSoonerThanTwentyMinutes() throws {
        var random = SplitMix64(seed: 28)
        let renewals: [Int64] = [20 * 60, 50 * 60, 60 * 60 - 1]
        for renewAfter in renewals {
            let tokens = try APNsProviderToken(key: try Self.key(), renewAfter: renewAfter)
            var now = Self.t0
            var issuedAt: [String: Int64] = [:]
            var token = tokens.token(now: now)
            issuedAt[token] = now
            for _ in 0..<400 {
                now += Int64(random.next() % 300 as UInt64)
                if random.next() % 3 as UInt64 == 0 {
                    if let renewed = try? tokens.expired(token, now: now) { token = renewed }
                } else {
                    token = tokens.token(now: now)
                }
                if issuedAt[token] == nil { issuedAt[token] = now }
            }
            let times = issuedAt.values.sorted()
            #expect(times.count > 10 && tokens.issued == times.count)
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 20 * 60 }, "\(times)")
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 <= renewAfter + 300 })
        }
        let key = try Self.key()
        let tooSoon: Int64 = 20 * 60 - 1, tooLate: Int64 = 60 * 60
        #expect(throws: SenderError.self) { _ = try APNsProviderToken(key: key, renewAfter: tooSoon) }
        #expect(throws: SenderError.self) { _ = try APNsProviderToken(key: key, renewAfter: tooLate) }
    }

    @Test func aBadKeyFileSaysWhatIsWrongWithoutItsContents() throws {
        let dir = try TemporaryDirectory()
        func failure(_ body: () throws(SenderError) -> APNsSigningKey) -> SenderError? {
            do { _ = try body(); return nil } catch { return error }
        }
        let missing = failure { () throws(SenderError) in try APNsSigningKey(contentsOf: dir.path("AuthKey.p8"), keyID: "ABCDE12345", teamID: "TEAM123456") }
        #expect(missing?.code == .credentials && missing?.message.contains("does not exist") == true && missing?.context == dir.path("AuthKey.p8"))
        let text = dir.path("text.p8")
        try "not a key".write(toFile: text, atomically: true, encoding: .utf8)
        #expect(failure { () throws(SenderError) in try APNsSigningKey(contentsOf: text, keyID: "ABCDE12345", teamID: "TEAM123456") }?.message.contains("not a PEM") == true)
        let p384 = P384.Signing.PrivateKey().pemRepresentation
        let wrongCurve = failure { () throws(SenderError) in try APNsSigningKey(pem: p384, keyID: "ABCDE12345", teamID: "TEAM123456") }
        #expect(wrongCurve?.code == .credentials && wrongCurve?.message.contains("P-256") == true && !"\(wrongCurve!)".contains("PRIVATE"))
        let pem = P256.Signing.PrivateKey().pemRepresentation
        let shortID = failure { () throws(SenderError) in try APNsSigningKey(pem: pem, keyID: "ABC", teamID: "TEAM123456") }
        #expect(shortID?.message.contains("key id") == true && shortID?.message.contains("--apns-key-id") == true)
        let badTeam = failure { () throws(SenderError) in try APNsSigningKey(pem: pem, keyID: "ABCDE12345", teamID: "TEAM-12345") }
        #expect(badTeam?.message.contains("--apns-team-id") == true)
    }
}
