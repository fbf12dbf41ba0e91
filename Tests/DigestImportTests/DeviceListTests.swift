import DigestCore
import DigestImport
import Testing

/// A list of named devices (`--test-devices`) is read as the import reads a user's devices: what
/// `users.jsonl` refuses, the list refuses, naming the entry.
@Suite struct DeviceListTests {
    static let p256dh = ImportProviderTests.p256dh
    static let auth = ImportProviderTests.auth
    static let apnsToken = String(repeating: "0A1B2C3D", count: 8)

    static func subscription(endpoint: String = ImportProviderTests.endpoint, p256dh: String = p256dh) -> String {
        #"{"endpoint":"\#(endpoint)","expirationTime":null,"keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#
    }

    static func entries(_ text: String) -> Result<[DeviceList.Entry], LineProblem> {
        Result { () throws(LineProblem) in try DeviceList.entries(Array(text.utf8)) }
    }

    @Test func eachProvidersDeviceAsTheImportReadsIt() throws {
        let entries = try Self.entries("""
            [{"name": "Ana's Pixel", "provider": "fcm", "platform": "android", "token": "dX3-token:APA91b"},
             {"name": "Ana's iPhone", "provider": "apns", "token": "\(Self.apnsToken)", "topic": "com.example.news"},
             {"name": "Ana's browser", "provider": "webpush", "subscription": \(Self.subscription())}]
            """).get()
        #expect(entries.map(\.name) == ["Ana's Pixel", "Ana's iPhone", "Ana's browser"])
        #expect(entries[0].device == Device(token: "dX3-token:APA91b", platform: .android, provider: .fcm))
        // The APNs token lower-cased and the platform implied, as the import does.
        #expect(entries[1].device == Device(token: Self.apnsToken.lowercased(), platform: .ios, topic: "com.example.news", provider: .apns))
        #expect(entries[2].device == Device(endpoint: ImportProviderTests.endpoint, keys: .init(p256dh: Self.p256dh, auth: Self.auth)))
    }

    @Test(arguments: [
        (#"{"name": "P", "provider": "fcm", "platform": "android", "token": "has space"}"#, ImportSkipReason.badToken, "[0] 'P': token holds a space"),
        (#"{"name": "P", "provider": "fcm", "token": "t"}"#, .missingField, "platform"),
        (#"{"name": "I", "provider": "apns", "token": "apns-token-abcdef012345"}"#, .badToken, "[0] 'I': an apns token is hex digits only"),
        (#"{"name": "I", "provider": "apns", "platform": "android", "token": "\#(apnsToken)"}"#, .badPlatform, "with provider apns"),
        (#"{"name": "I", "provider": "apns", "token": "\#(apnsToken)", "topic": "com example"}"#, .badTopic, "not a bundle id"),
        (#"{"name": "B", "provider": "webpush", "subscription": \#(subscription(endpoint: "https://user:pw@push.example.com/x"))}"#, .badEndpoint, "user name or password"),
        (#"{"name": "B", "provider": "webpush", "subscription": \#(subscription(endpoint: "http://push.example.com/x"))}"#, .badEndpoint, "not an https URL"),
        (#"{"name": "B", "provider": "webpush", "subscription": \#(subscription(p256dh: "BAAA"))}"#, .badSubscriptionKeys, "[0] 'B'"),
        (#"{"name": "X", "provider": "pigeon", "token": "t"}"#, .badProvider, "unknown provider 'pigeon'"),
        (#"{"provider": "fcm", "platform": "android", "token": "t"}"#, .missingField, "name"),
        (#"{"name": "", "provider": "fcm", "platform": "android", "token": "t"}"#, .badID, "a name of 1 to 100 bytes"),
        (#"{"name": "P\u0007", "provider": "fcm", "platform": "android", "token": "t"}"#, .badID, "control character"),
        ("\"P\"", .wrongType, "'[0]' must be an object"),
    ])
    func aBadEntryIsRefusedWithItsReason(entry: String, code: ImportSkipReason, says: String) {
        guard case .failure(let problem) = Self.entries("[\(entry)]") else {
            Issue.record("accepted: \(entry)")
            return
        }
        #expect(problem.code == code, "\(problem.reason)")
        #expect(problem.reason.contains(says), "\(problem.reason)")
    }

    @Test func aNameGivenTwiceOrAFileThatIsNoListIsRefused() throws {
        let twice = #"[{"name": "P", "provider": "fcm", "platform": "android", "token": "a"}, {"name": "P", "provider": "fcm", "platform": "ios", "token": "b"}]"#
        #expect(throws: LineProblem.self) { try DeviceList.entries(Array(twice.utf8)) }
        if case .failure(let problem) = Self.entries(twice) { #expect(problem.code == .duplicateID && problem.reason.hasPrefix("[1]")) }
        for text in [#"{"name": "P"}"#, "", "[", "[] []"] {
            #expect(throws: LineProblem.self, "\(text)") { try DeviceList.entries(Array(text.utf8)) }
        }
        #expect(try Self.entries("[]").get().isEmpty)
    }
}
