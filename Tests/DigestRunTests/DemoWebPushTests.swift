import DigestCore
import DigestDemo
import DigestSQLite
import DigestStore
import DigestSender
import DigestTesting
import Foundation
import Testing

/// The demo's standard Web Push subscribers: real keys drawn from each subscriber's id, so a message
/// encrypted to a subscription decrypts with the private key the demo hands the fake push service;
/// the share of web devices on Web Push changes no other draw of the history.
@Suite struct DemoWebPushTests {
    static func devices(percentWebPush: Int, base: String = DemoWebPush.defaultBase) -> [[Device]] {
        var history = DemoHistory(
            week: try! ISOWeek(parsing: "2026-W46"), users: 300, reads: 3000, articles: 40, percentWebPush: percentWebPush, webPushBase: base)
        var devices: [[Device]] = []
        while let user = history.nextUser() { devices.append(user.reader.devices) }
        return devices
    }

    @Test func subscribersHaveRealKeysWhosePrivateHalfTheDemoKeeps() throws {
        let base = "https://127.0.0.1:4443/push"
        let all = Self.devices(percentWebPush: 100, base: base)
        let subscriptions = all.joined().filter { $0.provider == .webpush }
        #expect(subscriptions.count > 20 && subscriptions.count == all.joined().count { $0.platform == .web })
        #expect(Self.devices(percentWebPush: 100, base: base) == all, "the same history, the same subscriptions")
        let secrets = DemoWebPush.secrets(of: subscriptions)
        #expect(secrets.count == Set(subscriptions.map(\.token)).count)
        for device in subscriptions.prefix(5) {
            #expect(device.platform == .web && device.token.hasPrefix(base + "/") && device.token.count == base.count + 25)
            let keys = try #require(device.subscriptionKeys)
            let secret = try #require(secrets[device.token])
            #expect(secret.keys == keys)
            let plaintext = Array(#"{"title":"Twój tydzień","body":"Ваша неделя"}"#.utf8)
            let body = try WebPushEncryption.encrypt(plaintext, to: try WebPushSubscriptionKeys(p256dh: keys.p256dh, auth: keys.auth))
            #expect(try WebPushDecryption.decrypt(body, privateKey: secret.privateKey, auth: secret.auth) == plaintext)
            // Another subscriber's key does not open it.
            let other = DemoWebPush.secrets(subscriber: "someone-else")
            #expect(throws: WebPushDecryption.Failure.self) { try WebPushDecryption.decrypt(body, privateKey: other.privateKey, auth: other.auth) }
        }
    }

    /// Which web devices are on Web Push depends on their token alone: every other device, and every
    /// draw after it, is what it was without them (so the benchmarks' histories do not move).
    @Test func theShareOnWebPushChangesNothingElse() {
        let none = Self.devices(percentWebPush: 0), half = Self.devices(percentWebPush: 50)
        #expect(none.joined().allSatisfy { $0.provider != .webpush })
        let moved = half.joined().filter { $0.provider == .webpush }
        #expect(moved.count > 5 && moved.count < none.joined().count { $0.platform == .web })
        /// Whether `after` is `before` but for a web device put on Web Push.
        func same(_ before: Device, _ after: Device) -> Bool {
            after.provider == .webpush ? before.platform == .web : before == after
        }
        let unchanged = zip(none, half).allSatisfy { before, after in
            before.count == after.count && zip(before, after).allSatisfy(same)
        }
        #expect(unchanged)
    }

    /// `digest demo --webpush-devices` imports the subscriptions (strictly) and enqueues their
    /// plaintexts; a base that is not https is refused before anything is written.
    @Test func theDemoEnqueuesItsSubscribersPlaintexts() async throws {
        let dir = try TemporaryDirectory()
        let demo = try await DigestBinary.run([
            "demo", "--out", dir.path("demo"), "--users", "150", "--images", "0", "--webpush-devices", "100",
            "--webpush-base", "https://127.0.0.1:9443/push/", "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z",
        ])
        #expect(demo.status == 0, "\(demo.stderr)")
        let db = dir.path("demo/digest.sqlite")
        let rows = try await SQLiteDatabase.sqlite(path: db).peek(limit: 1000, state: nil)
        let webPush = rows.filter { $0.provider == .webpush }
        #expect(!webPush.isEmpty && rows.allSatisfy { $0.platform != .web || $0.provider == .webpush })
        for row in webPush {
            #expect(row.target.hasPrefix("https://127.0.0.1:9443/push/") && !row.target.hasPrefix("https://127.0.0.1:9443/push//"))
            let headers = try WebPushHeaders(json: Array((row.headers ?? "").utf8))
            #expect(DemoWebPush.secrets(of: [Device(endpoint: row.target, keys: .init(p256dh: headers.p256dh, auth: headers.auth))])
                .values.first?.keys.p256dh == headers.p256dh)
        }
        #expect(FileManager.default.fileExists(atPath: dir.path("demo/messages/BigText-web-webpush.json")))
        let refused = try await DigestBinary.run(["demo", "--out", dir.path("other"), "--webpush-base", "http://127.0.0.1/push"])
        #expect(refused.status == 64 && refused.stderr.contains("--webpush-base must be an https URL"), "\(refused.stderr)")
    }
}
