import Crypto
import DigestCore
import DigestTesting
import Foundation
import Testing

@testable import DigestFakes
@testable import DigestSender

/// VAPID (RFC 8292): the key's PEM forms, the JWT's bytes and signature, the origin as `aud`, the
/// subject's rules, one token per origin reused while over an hour is left, and
/// `digest webpush keygen` through the real binary.
@Suite struct WebPushVAPIDTests {
    static let t0: Int64 = 1_800_000_000
    static let subject = "mailto:push@example.com"

    /// One test key in both PEM forms (`openssl ecparam -name prime256v1 -genkey` and
    /// `openssl pkcs8 -topk8 -nocrypt` of it), and its public key.
    static let sec1PEM = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIDXboA+s5TeUgg1lVHr1o5XzZ8VXlIA1g/Xbq7BOy+QNoAoGCCqGSM49
        AwEHoUQDQgAEp/7LXAdqNwXhrzqbRsW8VCI8N8sQ+lfhJNRwKYrl3IpW8GFxNtEm
        1MejVYHQfLY5nKVBrVWeodSOUwqjcBy+Cw==
        -----END EC PRIVATE KEY-----
        """
    static let pkcs8PEM = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgNdugD6zlN5SCDWVU
        evWjlfNnxVeUgDWD9dursE7L5A2hRANCAASn/stcB2o3BeGvOptGxbxUIjw3yxD6
        V+Ek1HApiuXcilbwYXE20SbUx6NVgdB8tjmcpUGtVZ6h1I5TCqNwHL4L
        -----END PRIVATE KEY-----
        """
    static let publicKey = "BKf-y1wHajcF4a86m0bFvFQiPDfLEPpX4STUcCmK5dyKVvBhcTbRJtTHo1WB0Hy2OZylQa1VnqHUjlMKo3Acvgs"

    static func failure<T>(_ body: () throws(SenderError) -> T) -> SenderError? {
        do { _ = try body(); return nil } catch { return error }
    }

    @Test func bothPEMFormsLoadToTheSameKey() throws {
        let sec1 = try VAPIDKey(pem: Self.sec1PEM)
        let pkcs8 = try VAPIDKey(pem: Self.pkcs8PEM)
        #expect(sec1.publicKey == Self.publicKey && pkcs8.publicKey == Self.publicKey)
        #expect(sec1.key.rawRepresentation == pkcs8.key.rawRepresentation)
        // What keygen writes is PKCS#8, and reads back as the same key.
        #expect(sec1.pkcs8PEM.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(try VAPIDKey(pem: sec1.pkcs8PEM).publicKey == Self.publicKey)
        let fresh = VAPIDKey.generate()
        #expect(fresh.publicKey.count == 87 && Base64URL.decode(fresh.publicKey)?.first == 0x04 && fresh.publicKey != Self.publicKey)
    }

    @Test func aBadKeyFileSaysWhatIsWrongWithoutItsContents() throws {
        let dir = try TemporaryDirectory()
        let missing = Self.failure { () throws(SenderError) in try VAPIDKey(contentsOf: dir.path("vapid.pem")) }
        #expect(missing?.code == .credentials && missing?.message.contains("does not exist") == true && missing?.context == dir.path("vapid.pem"))
        let text = dir.path("text.pem")
        try "not a key".write(toFile: text, atomically: true, encoding: .utf8)
        #expect(Self.failure { () throws(SenderError) in try VAPIDKey(contentsOf: text) }?.message.contains("not a PEM") == true)
        let p384 = P384.Signing.PrivateKey().pemRepresentation
        let wrongCurve = Self.failure { () throws(SenderError) in try VAPIDKey(pem: p384, source: "k.pem") }
        #expect(wrongCurve?.code == .credentials && wrongCurve?.message.contains("P-256") == true && wrongCurve?.context == "k.pem")
        let body = p384.split(separator: "\n")[1].prefix(16)
        #expect(!"\(wrongCurve!)".contains(body))
    }

    @Test func theJWTIsES256WithAudExpAndSubAndVerifies() throws {
        let key = try VAPIDKey(pem: Self.pkcs8PEM)
        let token = VAPIDToken.sign(key: key, audience: "https://push.example.net", subject: Self.subject, expires: Self.t0 + 43_200)
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        #expect(Base64URL.decode(parts[0]) == Array(#"{"typ":"JWT","alg":"ES256"}"#.utf8))
        #expect(Base64URL.decode(parts[1]) == Array(#"{"aud":"https://push.example.net","exp":1800043200,"sub":"mailto:push@example.com"}"#.utf8))
        let signature = try #require(Base64URL.decode(parts[2]))
        #expect(signature.count == 64)
        let publicKey = try P256.Signing.PublicKey(x963Representation: try #require(Base64URL.decode(Self.publicKey)))
        #expect(publicKey.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: signature), for: Array("\(parts[0]).\(parts[1])".utf8)))
        #expect(!publicKey.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: signature), for: Array("\(parts[0]).\(parts[0])".utf8)))
    }

    @Test func theAuthorizationHeaderCarriesTheTokenAndThePublicKey() throws {
        let key = try VAPIDKey(pem: Self.sec1PEM)
        let tokens = try VAPIDToken(key: key, subject: Self.subject)
        let header = tokens.authorization(origin: "https://fcm.googleapis.com", now: Self.t0)
        #expect(header.hasPrefix("vapid t=") && header.hasSuffix(", k=\(Self.publicKey)"))
        let jwt = header.dropFirst("vapid t=".count).prefix { $0 != "," }
        let claims = try #require(Base64URL.decode(jwt.split(separator: ".")[1]))
        // 12 hours by default.
        #expect(claims == Array(#"{"aud":"https://fcm.googleapis.com","exp":1800043200,"sub":"mailto:push@example.com"}"#.utf8))
    }

    static let origins: [(endpoint: String, origin: String)] = [
        ("https://fcm.googleapis.com/fcm/send/dGVzdA:APA91b", "https://fcm.googleapis.com"),
        ("https://updates.push.services.mozilla.com/wpush/v2/gAAAAA", "https://updates.push.services.mozilla.com"),
        ("https://Web.Push.Apple.com/QGx?a=b#c", "https://web.push.apple.com"),
        ("https://push.example.net:8443/p/1", "https://push.example.net:8443"),
        ("https://push.example.net:443/p/1", "https://push.example.net"),
        ("https://127.0.0.1:9000/", "https://127.0.0.1:9000"),
        ("https://[::1]:9000/x", "https://[::1]:9000"),
    ]

    @Test(arguments: origins.indices)
    func theAudienceIsTheEndpointsOrigin(index: Int) throws {
        #expect(try VAPIDToken.origin(of: Self.origins[index].endpoint) == Self.origins[index].origin)
    }

    @Test func anEndpointThatIsNotHTTPSIsRefusedWithoutItsPath() {
        for (endpoint, says) in [("http://push.example.net/secret-id", "scheme is http"), ("not a url", "not a URL"), ("https:///secret-id", "no host")] {
            #expect(throws: WebPushError.self) { try VAPIDToken.origin(of: endpoint) }
            do { _ = try VAPIDToken.origin(of: endpoint) } catch {
                #expect(error.code == .endpoint && error.message.contains(says) && !error.message.contains("secret-id"), "\(endpoint): \(error)")
            }
        }
    }

    static let subjects: [(subject: String, says: String?)] = [
        ("mailto:push@example.com", nil),
        ("mailto:Push+web@news.example.co.uk", nil),
        ("https://news.example.com/contact", nil),
        ("mailto:admin@localhost", "Apple"),
        ("MAILTO:admin@LOCALHOST", "Apple"),
        ("push@example.com", "neither a mailto: address nor an https: URL"),
        ("http://news.example.com/contact", "neither"),
        ("mailto:", "not a mailto: address"),
        ("mailto:@example.com", "not a mailto: address"),
        ("mailto:push@", "not a mailto: address"),
        ("https://", "not an https URL with a host"),
        ("mailto:push@example.com\nX: y", "control characters"),
    ]

    @Test(arguments: subjects.indices)
    func theSubjectIsAMailtoOrHTTPSContactNotAtLocalhost(index: Int) throws {
        let (subject, says) = Self.subjects[index]
        let error = Self.failure { () throws(SenderError) in try VAPIDToken(key: VAPIDKey.generate(), subject: subject) }
        if let says {
            #expect(error?.code == .configuration && error?.message.contains(says) == true, "\(subject): \(String(describing: error))")
        } else {
            #expect(error == nil, "\(subject): \(String(describing: error))")
        }
    }

    @Test func aTokenIsReusedPerOriginWhileOverAnHourIsLeft() throws {
        let tokens = try VAPIDToken(key: VAPIDKey.generate(), subject: Self.subject, lifetime: 12 * 3600)
        let a = "https://fcm.googleapis.com", b = "https://web.push.apple.com"
        let first = tokens.authorization(origin: a, now: Self.t0)
        #expect(tokens.authorization(origin: a, now: Self.t0 + 11 * 3600 - 1) == first)
        let other = tokens.authorization(origin: b, now: Self.t0 + 60)
        #expect(other != first && tokens.issued == 2)
        // An hour left: renewed, with a new exp.
        let second = tokens.authorization(origin: a, now: Self.t0 + 11 * 3600)
        #expect(second != first && tokens.issued == 3)
        #expect(tokens.authorization(origin: a, now: Self.t0 + 11 * 3600 + 5) == second)
        #expect(tokens.authorization(origin: b, now: Self.t0 + 11 * 3600 + 5) == other)
        // A clock gone back by more than the rest of a day: exp would be over 24 h ahead, so renewed.
        let back = tokens.authorization(origin: a, now: Self.t0 - 12 * 3600)
        #expect(back != second && tokens.issued == 4)
        // Every exp handed out is at most 24 hours ahead and over an hour ahead.
        for now in stride(from: Self.t0, to: Self.t0 + 3 * 86_400, by: 1800) {
            let header = tokens.authorization(origin: a, now: now)
            let jwt = header.dropFirst("vapid t=".count).prefix { $0 != "," }
            let claims = try #require(Base64URL.decode(jwt.split(separator: ".")[1]))
            let exp = try #require((try JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any])?["exp"] as? NSNumber).int64Value
            #expect(exp - now > 3600 && exp - now <= 86_400)
        }
    }

    /// Origins come from subscribers: at most `limit` tokens are held, the one signed first dropped
    /// (and signed anew when its origin comes back).
    @Test func tokensAreHeldForALimitedNumberOfOrigins() throws {
        let tokens = try VAPIDToken(key: VAPIDKey.generate(), subject: Self.subject, limit: 3)
        let first = tokens.authorization(origin: "https://a.example", now: Self.t0)
        for (index, origin) in ["https://b.example", "https://c.example"].enumerated() {
            _ = tokens.authorization(origin: origin, now: Self.t0 + Int64(index + 1))
        }
        #expect(tokens.authorization(origin: "https://a.example", now: Self.t0 + 10) == first && tokens.issued == 3)
        _ = tokens.authorization(origin: "https://d.example", now: Self.t0 + 20)
        #expect(tokens.issued == 4)
        #expect(tokens.authorization(origin: "https://c.example", now: Self.t0 + 30) != first && tokens.issued == 4)
        #expect(tokens.authorization(origin: "https://a.example", now: Self.t0 + 40) != first && tokens.issued == 5)
        for port in 1...200 { _ = tokens.authorization(origin: "https://e.example:\(port)", now: Self.t0 + 50) }
        #expect(tokens.held == 3)
    }

    @Test func theLifetimeIsTwoToTwentyFourHours() throws {
        let key = VAPIDKey.generate()
        let day = try VAPIDToken(key: key, subject: Self.subject, lifetime: 86_400)
        let header = day.authorization(origin: "https://push.example.net", now: Self.t0)
        let jwt = header.dropFirst("vapid t=".count).prefix { $0 != "," }
        let claims = try #require(Base64URL.decode(jwt.split(separator: ".")[1]))
        #expect(String(decoding: claims, as: UTF8.self).contains(#""exp":1800086400,"#))
        for lifetime: Int64 in [7199, 86_401, 0, -1] {
            let error = Self.failure { () throws(SenderError) in try VAPIDToken(key: key, subject: Self.subject, lifetime: lifetime) }
            #expect(error?.code == .configuration && error?.message.contains("\(lifetime) s") == true)
        }
        _ = try VAPIDToken(key: key, subject: Self.subject, lifetime: 7200)
    }

    @Test func keygenWritesALoadable0600KeyAndNeverOverwrites() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("vapid.pem")
        let made = try await DigestBinary.run(["webpush", "keygen", "--out", path])
        #expect(made.status == 0, "\(made.stderr)")
        let lines = made.stdout.split(separator: "\n")
        #expect(lines.count == 2 && lines[1].contains("applicationServerKey") && lines[1].contains("pushManager.subscribe"))
        let key = try VAPIDKey(contentsOf: path)
        #expect(String(lines[0]) == key.publicKey && key.publicKey.count == 87)
        let contents = try String(contentsOfFile: path, encoding: .utf8)
        #expect(contents.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)

        let again = try await DigestBinary.run(["webpush", "keygen", "--out", path])
        #expect(again.status == 73 && again.stderr.contains("exists") && again.stdout.isEmpty, "\(again.stderr)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == contents)
        let nowhere = try await DigestBinary.run(["webpush", "keygen", "--out", dir.path("no/such/dir/vapid.pem")])
        #expect(nowhere.status == 73 && nowhere.stderr.contains("No such file"), "\(nowhere.stderr)")
    }
}
