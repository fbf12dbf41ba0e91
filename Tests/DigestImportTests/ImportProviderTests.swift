import DigestCore
@testable import DigestImport
import DigestStore
import Testing

/// A device's `provider` and `topic` (docs/010-input-files.md): FCM unless it says `apns` or `webpush`;
/// an APNs token is hex, lower-cased; `apns` means an iOS device; a `webpush` device is a browser's
/// subscription, its endpoint the token.
@Suite struct ImportProviderTests {
    /// The devices of a users line, or the skip's reason and message.
    static func devices(_ line: String) -> Result<[Device], LineProblem> {
        do {
            guard case .user(let reader)? = try HistoryImporter<NullSink>.record(from: .bytes(Array(line.utf8)), kind: .users) else {
                return .success([])
            }
            return .success(reader.reader.devices)
        } catch {
            return .failure(error)
        }
    }

    static func problem(_ line: String) -> String {
        switch devices(line) {
        case .success(let devices): "imported \(devices.count)"
        case .failure(let problem): "\(problem.code.rawValue): \(problem.reason)"
        }
    }

    static let token = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"

    @Test func aDeviceWithoutAProviderIsFCMAndKeepsItsTokenAsWritten() throws {
        let devices = try Self.devices(#"{"id":"u1","devices":[{"token":"AbC-1","platform":"android"}]}"#).get()
        #expect(devices == [Device(token: "AbC-1", platform: .android, provider: .fcm)])
        #expect(devices.first?.topic == nil)
    }

    @Test func anAPNsDeviceIsIOSWithItsTokenLowerCasedAndItsTopic() throws {
        let line = #"{"id":"u1","devices":[{"token":"\#(Self.token.uppercased())","provider":"apns","topic":"com.example.News-2.voip"}]}"#
        #expect(
            try Self.devices(line).get()
                == [Device(token: Self.token, platform: .ios, topic: "com.example.News-2.voip", provider: .apns)])
        let withPlatform = #"{"id":"u1","devices":[{"token":"\#(Self.token)","provider":"apns","platform":"ios"}]}"#
        #expect(try Self.devices(withPlatform).get() == [Device(token: Self.token, platform: .ios, provider: .apns)])
        // One device, however its hex is written.
        let twice = #"{"id":"u1","devices":[{"token":"\#(Self.token)","provider":"apns"},{"token":"\#(Self.token.uppercased())","provider":"apns"}]}"#
        #expect(try Self.devices(twice).get().count == 1)
    }

    @Test func anAPNsTokenIsEvenHexOf64To200Digits() throws {
        for digits in [64, 66, 200] {
            let line = #"{"id":"u1","devices":[{"token":"\#(String(repeating: "F", count: digits))","provider":"apns"}]}"#
            #expect(try Self.devices(line).get().first?.token == String(repeating: "f", count: digits), "\(digits)")
        }
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"\#(String(repeating: "a", count: 62))","provider":"apns"}]}"#)
                == "bad_token: user 'u1': devices[0]: an apns token of 62 hex digits (an even number from 64 to 200)")
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"\#(String(repeating: "a", count: 65))","provider":"apns"}]}"#)
                == "bad_token: user 'u1': devices[0]: an apns token of 65 hex digits (an even number from 64 to 200)")
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"\#(String(repeating: "a", count: 202))","provider":"apns"}]}"#)
                == "bad_token: user 'u1': devices[0]: an apns token of 202 hex digits (an even number from 64 to 200)")
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"\#(String(repeating: "g", count: 64))","provider":"apns"}]}"#)
                == "bad_token: user 'u1': devices[0]: an apns token is hex digits only")
        // An FCM token that looks like nothing of the sort is still a token.
        #expect(Self.problem(#"{"id":"u1","devices":[{"token":"g","platform":"ios","provider":"fcm"}]}"#) == "imported 1")
    }

    @Test func apnsMeansIOS() {
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"\#(Self.token)","provider":"apns","platform":"android"}]}"#)
                == "bad_platform: user 'u1': devices[0]: platform 'android' with provider apns (ios or none)")
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"\#(Self.token)","provider":"apns","platform":"web"}]}"#)
                == "bad_platform: user 'u1': devices[0]: platform 'web' with provider apns (ios or none)")
        // FCM still needs its platform.
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"t","provider":"fcm"}]}"#)
                == "missing_field: user 'u1': missing field 'devices[0].platform'")
    }

    @Test func anUnknownProviderOrABadTopicSkipsTheLine() {
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"t","platform":"web","provider":"pigeon"}]}"#)
                == "bad_provider: user 'u1': devices[0]: unknown provider 'pigeon' (fcm, apns or webpush)")
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"t","platform":"ios","provider":"APNS"}]}"#)
                == "bad_provider: user 'u1': devices[0]: unknown provider 'APNS' (fcm, apns or webpush)")
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"t","platform":"ios","provider":1}]}"#)
                == "wrong_type: user 'u1': 'devices[0].provider' must be a string, not a number")
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"\#(Self.token)","provider":"apns","topic":"com.example/news"}]}"#)
                == "bad_topic: user 'u1': devices[0]: topic 'com.example/news' is not a bundle id (letters, digits, '.' and '-')")
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"\#(Self.token)","provider":"apns","topic":""}]}"#)
                == "bad_topic: user 'u1': devices[0]: empty topic")
        let long = String(repeating: "a", count: 256)
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"\#(Self.token)","provider":"apns","topic":"\#(long)"}]}"#)
                == "bad_topic: user 'u1': devices[0]: topic of 256 bytes, over the limit of 255")
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"\#(Self.token)","provider":"apns","topic":"\#(long.dropLast())"}]}"#)
                == "imported 1")
    }

    // MARK: - Web Push

    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
    static let endpoint = "https://fcm.googleapis.com/fcm/send/abc:APA91b-secret-part"

    /// A users line with one `webpush` device: `subscription` as `PushSubscription.toJSON()` gives it,
    /// then `extra` members of the device.
    static func webPushLine(
        endpoint: String = endpoint, p256dh: String = p256dh, auth: String = auth, expiration: String = "null", extra: String = ""
    ) -> String {
        #"{"id":"u1","devices":[{"provider":"webpush","subscription":{"endpoint":"\#(endpoint)","expirationTime":\#(expiration),"keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}\#(extra)}]}"#
    }

    @Test func aWebPushSubscriptionIsAWebDeviceWhoseTokenIsItsEndpoint() throws {
        let expected = Device(endpoint: Self.endpoint, keys: .init(p256dh: Self.p256dh, auth: Self.auth))
        #expect(try Self.devices(Self.webPushLine()).get() == [expected])
        #expect(expected.token == Self.endpoint && expected.platform == .web && expected.provider == .webpush)
        // The platform and the token may be given, as the endpoint; a registration date is kept.
        let given = Self.webPushLine(extra: #","platform":"web","token":"\#(Self.endpoint)","registeredAt":"2026-11-01T08:00:00Z""#)
        #expect(try Self.devices(given).get().first?.registeredAt == 1_793_520_000)
        // expirationTime is read (milliseconds, or null) and not kept; padded base64url keys as written.
        #expect(try Self.devices(Self.webPushLine(expiration: "1796025600000")).get() == [expected])
        let padded = try Self.devices(Self.webPushLine(auth: Self.auth + "==")).get()
        #expect(padded.first?.subscriptionKeys?.auth == Self.auth + "==")
        // Which host is not the import's business: a loopback push service goes in.
        #expect(try Self.devices(Self.webPushLine(endpoint: "https://127.0.0.1:8443/push/1")).get().first?.token == "https://127.0.0.1:8443/push/1")
        // The same endpoint twice is one device.
        let twice = #"{"id":"u1","devices":[\#(Self.webPushDevice()),\#(Self.webPushDevice())]}"#
        #expect(try Self.devices(twice).get().count == 1)
    }

    /// The device object of ``webPushLine`` alone.
    static func webPushDevice() -> String {
        let line = webPushLine()
        return String(line.dropFirst(#"{"id":"u1","devices":["#.count).dropLast(2))
    }

    /// Skips name the reason and never quote the endpoint or a key.
    @Test func aBadSubscriptionSkipsTheLineWithItsReason() {
        let cases: [(String, String)] = [
            (Self.webPushLine(endpoint: "http://push.example.net/e/1"), "bad_endpoint: user 'u1': devices[0]: the endpoint is not an https URL with a host"),
            (Self.webPushLine(endpoint: "https:///e/1"), "bad_endpoint: user 'u1': devices[0]: the endpoint is not an https URL with a host"),
            (Self.webPushLine(endpoint: "push.example.net/e/1"), "bad_endpoint: user 'u1': devices[0]: the endpoint is not an https URL with a host"),
            (
                Self.webPushLine(endpoint: "https://user:pw@push.example.net/e/1"),
                "bad_endpoint: user 'u1': devices[0]: the endpoint holds a user name or password"
            ),
            (
                Self.webPushLine(endpoint: "https://push.example.net/e/1 2"),
                "bad_endpoint: user 'u1': devices[0]: the endpoint holds a character outside printable ASCII (U+0020)"
            ),
            (
                Self.webPushLine(endpoint: "https://push.example.net/" + String(repeating: "e", count: 1_000)),
                "bad_endpoint: user 'u1': devices[0]: an endpoint of 1025 bytes, over the limit of 1024"
            ),
            (
                Self.webPushLine(p256dh: String(Self.p256dh.dropLast(4))),
                "bad_subscription_keys: user 'u1': devices[0]: the subscription's p256dh key is 62 bytes: a P-256 public key is an uncompressed point of 65 bytes starting with 0x04"
            ),
            (
                Self.webPushLine(p256dh: "BA" + String(repeating: "A", count: 85)),
                "bad_subscription_keys: user 'u1': devices[0]: the subscription's p256dh key is not a point on the P-256 curve"
            ),
            (
                Self.webPushLine(auth: "AAAA"),
                "bad_subscription_keys: user 'u1': devices[0]: the subscription's auth secret is 3 bytes: it must be 16"
            ),
            (
                Self.webPushLine(auth: "not base64!"),
                "bad_subscription_keys: user 'u1': devices[0]: the subscription's auth secret is not base64url"
            ),
            (
                Self.webPushLine(extra: #","token":"tok-1""#),
                "bad_token: user 'u1': devices[0]: a webpush device's token, when given, must be its subscription's endpoint"
            ),
            (
                Self.webPushLine(extra: #","platform":"android""#),
                "bad_platform: user 'u1': devices[0]: platform 'android' with provider webpush (web or none)"
            ),
            (Self.webPushLine(expiration: #""soon""#), "wrong_type: user 'u1': 'devices[0].subscription.expirationTime' must be a number, not a string"),
            (
                #"{"id":"u1","devices":[{"provider":"webpush","platform":"web"}]}"#,
                "missing_field: user 'u1': missing field 'devices[0].subscription'"
            ),
            (
                #"{"id":"u1","devices":[{"provider":"webpush","subscription":{"endpoint":"https://a.example/1"}}]}"#,
                "missing_field: user 'u1': missing field 'devices[0].subscription.keys'"
            ),
            (
                #"{"id":"u1","devices":[{"provider":"webpush","subscription":{"endpoint":"https://a.example/1","keys":{"auth":"x"}}}]}"#,
                "missing_field: user 'u1': missing field 'devices[0].subscription.keys.p256dh'"
            ),
            (
                #"{"id":"u1","devices":[{"provider":"webpush","subscription":"https://a.example/1"}]}"#,
                "wrong_type: user 'u1': 'devices[0].subscription' must be an object, not a string"
            ),
        ]
        for (line, expected) in cases {
            let problem = Self.problem(line)
            #expect(problem == expected)
            #expect(!problem.contains("push.example.net/e") && !problem.contains("a.example/1") && !problem.contains("BCVxsr7N"))
        }
    }
}
