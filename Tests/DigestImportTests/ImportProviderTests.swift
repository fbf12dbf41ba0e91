import DigestCore
@testable import DigestImport
import DigestStore
import Testing

/// A device's `provider` and `topic` (docs/010-input-files.md): FCM unless it says `apns`; an APNs
/// token is hex, lower-cased; `apns` means an iOS device.
@Suite struct ImportProviderTests {
    /// The devices of a users line, or the skip's reason and message.
    static func devices(_ line: String) -> Result<[Device], LineProblem> {
        do {
            guard case .user(let reader)? = try HistoryImporter<NullSink>.record(from: .bytes(Array(line.utf8)), kind: .users) else {
                return .success([])
            }
            return .success(reader.devices)
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
            Self.problem(#"{"id":"u1","devices":[{"token":"t","platform":"web","provider":"webpush"}]}"#)
                == "bad_provider: user 'u1': devices[0]: unknown provider 'webpush' (fcm or apns)")
        #expect(
            Self.problem(#"{"id":"u1","devices":[{"token":"t","platform":"ios","provider":"APNS"}]}"#)
                == "bad_provider: user 'u1': devices[0]: unknown provider 'APNS' (fcm or apns)")
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
}
