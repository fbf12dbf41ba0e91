import DigestCore
import DigestStore
import DigestTesting
import Foundation
import Testing

/// Standard Web Push subscriptions through the composer and the real binary, on both stores: each is
/// encoded as its plaintext with the row's headers beside it (``WebPushEncoder``), never as FCM; the
/// same plan's FCM web message shows the same notification; a rerun enqueues nothing twice; the
/// outbox's stats and peek name the provider and never print an endpoint or a key whole.
@Suite struct WebPushRunTests {
    static let keys = Device.SubscriptionKeys(
        p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", auth: "BTBZMqHH6r4Tts7J_aSIgg")
    static let endpoint = "https://fcm.googleapis.com/fcm/send/dGVzdC1zdWJzY3JpYmVyLTE:APA91bHk-secret"

    static func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    /// A reader with a Web Push subscription, an FCM web device and a Web Push row without keys (an
    /// adopter's view without them): two messages, the keyless device counted as skipped.
    @Test func theComposerWritesAWebPushRowBesideTheFCMOne() async throws {
        let composer = try HabitTimingTests.composer(habit: nil)
        let devices = [
            Device(endpoint: Self.endpoint, keys: Self.keys), Device(token: "tok-web", platform: .web),
            Device(token: "https://push.example.net/keyless", platform: .web, provider: .webpush),
        ]
        let reader = Reader(id: "w", locale: "pl", timeZone: "Europe/Warsaw", optedOut: false, devices: devices)
        let user = await HabitTimingTests.compose(composer, reader, HabitTimingTests.reads(zone: "Europe/Warsaw", days: [1, 2, 3], 19))
        #expect(user.skipped == nil && user.messages.count == 2)
        let webPush = try #require(user.messages.first { $0.provider == .webpush })
        let fcm = try #require(user.messages.first { $0.provider == .fcm })
        #expect(webPush.platform == .web && webPush.target == Self.endpoint && webPush.locale == "pl")
        let plan = try #require(user.plan)
        // The row's message is the encoder's plaintext with the row's own id; its headers the encoder's,
        // expiring with the row.
        let expected = try #require(
            WebPushEncoder().messages(
                for: NotificationEncoder().encode(plan, platforms: [.web]), keys: [Self.keys], messageIDs: [try #require(webPush.messageID)]
            ).first)
        #expect(webPush.message == expected.plaintext)
        #expect(webPush.headers == expected.headers.json)
        let headers = try WebPushHeaders(json: Array(try #require(webPush.headers).utf8))
        #expect(headers.expiresAt == webPush.expiresAt && headers.topic == "digest-\(HabitTimingTests.week)" && headers.auth == Self.keys.auth)
        // The same notification as the FCM web message, and that message's data keys but its own id.
        let plaintext = try Self.object(webPush.message)
        let message = try #require(try Self.object(fcm.message)["message"] as? [String: Any])
        let notification = try #require((message["webpush"] as? [String: Any])?["notification"] as? [String: Any])
        let data = try #require(message["data"] as? [String: String])
        #expect(Set(plaintext.keys) == Set(notification.keys).union(data.keys))
        #expect(NSDictionary(dictionary: plaintext.filter { notification[$0.key] != nil }) == NSDictionary(dictionary: notification))
        #expect(plaintext["digest_id"] as? String == data["digest_id"] && plaintext["deep_link"] as? String == data["deep_link"])
        #expect(plaintext["message_id"] as? String == webPush.messageID && webPush.messageID != fcm.messageID)

        let batch = await composer.compose(
            [reader], histories: [ReaderHistory(reads: HabitTimingTests.reads(zone: "Europe/Warsaw", days: [1, 2, 3], 19))], batch: 0)
        #expect(batch.counters.devicesSkipped == ["subscription_keys_missing": 1] && batch.counters.messages == 2)
        // With only the keyless device, the reader gets nothing, and says why.
        let keyless = Reader(id: "k", locale: "en", timeZone: "Europe/Warsaw", optedOut: false, devices: [devices[2]])
        let skipped = await HabitTimingTests.compose(composer, keyless, HabitTimingTests.reads(zone: "Europe/Warsaw", days: [1], 19))
        #expect(skipped.skipped == .subscriptionKeysMissing && skipped.messages.isEmpty)
    }

    /// A reader composed again (a batch redone, another run's instant: other message ids) enqueues
    /// nothing twice: the dedupe key holds the endpoint's hash, as it holds a token's.
    @Test(arguments: Backend.allCases) func aRecomposedSubscriptionIsNotEnqueuedTwice(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let reader = Reader(
            id: "w", locale: "en", timeZone: "Europe/Warsaw", optedOut: false,
            devices: [Device(endpoint: Self.endpoint, keys: Self.keys), Device(token: "tok-web", platform: .web)])
        let reads = HabitTimingTests.reads(zone: "Europe/Warsaw", days: [1, 2, 3], 19)
        func commit(now: Int64) async throws -> (enqueued: Int, ids: [String?]) {
            let user = await HabitTimingTests.compose(try HabitTimingTests.composer(habit: nil, now: now), reader, reads)
            let enqueued = try await store.withLedger { ledger in
                _ = try await ledger.begin(week: HabitTimingTests.week, now: 0)
                return try await ledger.commit(week: HabitTimingTests.week, through: 0, messages: user.messages, counters: RunCounters(), now: 0)
            }
            return (enqueued, user.messages.map(\.messageID))
        }
        let first = try await commit(now: HabitTimingTests.now)
        #expect(first.enqueued == 2)
        #expect(try await commit(now: HabitTimingTests.now).enqueued == 0)
        let later = try await commit(now: HabitTimingTests.now + 3600)
        #expect(later.enqueued == 0 && later.ids != first.ids)
        let rows = try await store.database.peek(limit: 10, state: nil)
        #expect(rows.map(\.provider).sorted { $0.rawValue < $1.rawValue } == [.fcm, .webpush])
    }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    @Test(arguments: TestStore.allCases) func webPushSubscriptionsAreEncodedAsTheirPlaintext(store: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let db = try await store.make(in: dir)
        let subscription = #"{"endpoint":"\#(Self.endpoint)","expirationTime":null,"keys":{"p256dh":"\#(Self.keys.p256dh)","auth":"\#(Self.keys.auth)"}}"#
        let users = try dir.write("users.jsonl", lines: [
            #"{"id":"u-both","locale":"en","timeZone":"UTC","devices":[{"token":"fcm-web","platform":"web"},{"provider":"webpush","subscription":\#(subscription)}]}"#,
            #"{"id":"u-fcm","locale":"en","timeZone":"UTC","devices":[{"token":"fcm-android","platform":"android"}]}"#,
        ])
        let reads = try dir.write("reads.jsonl", lines: [
            #"{"userId":"u-both","articleId":"a2","readAt":"2026-11-12T10:00:00Z","seconds":300}"#,
            #"{"userId":"u-fcm","articleId":"a2","readAt":"2026-11-12T10:00:00Z","seconds":300}"#,
        ])
        let imported = try await DigestBinary.run(["import", "--db", db, "--strict", users, Self.fixtures.appendingPathComponent("articles.jsonl").path, reads])
        #expect(imported.status == 0 && imported.stderr.isEmpty, "\(imported.stdout)\(imported.stderr)")
        let arguments = ["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"]
        let run = try await DigestBinary.run(arguments)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("messages: 3 built, 3 enqueued") && !run.stdout.contains("devices skipped"), "\(run.stdout)")
        let again = try await DigestBinary.run(arguments)
        #expect(again.status == 0 && again.stdout.contains("0 enqueued"), "\(again.stdout)")

        let stats = try await DigestBinary.run(["queue", "stats", "--db", db])
        #expect(stats.stdout.contains("by provider: fcm 2, webpush 1\n") && stats.stdout.contains("messages: 3 "), "\(stats.stdout)\(stats.stderr)")
        let peek = try await DigestBinary.run(["queue", "peek", "--db", db, "--limit", "3", "--show-tokens"])
        let rows = try peek.stdout.split(separator: "\n").map { try Self.object(Array($0.utf8)) }
        let row = try #require(rows.first { $0["provider"] as? String == "webpush" }, "\(peek.stdout)")
        #expect(row["platform"] as? String == "web" && row["user_id"] as? String == "u-both" && row["target"] as? String == Self.endpoint)
        let plaintext = try #require(row["message"] as? [String: Any])
        #expect(plaintext["title"] as? String != nil && plaintext["tag"] as? String == "digest-2026-W46" && plaintext["message"] == nil)
        #expect(plaintext["message_id"] as? String == row["message_id"] as? String)
        let headers = try #require(row["headers"] as? [String: Any])
        #expect(headers["p256dh"] as? String == Self.keys.p256dh && headers["urgency"] as? String == "normal")
        // Masked: the endpoint's origin and tail, the keys as `…`.
        let masked = try await DigestBinary.run(["queue", "peek", "--db", db])
        #expect(!masked.stdout.contains(Self.endpoint) && !masked.stdout.contains(Self.keys.p256dh) && !masked.stdout.contains(Self.keys.auth))
        #expect(masked.stdout.contains(#""target":"https://fcm.googleapis.com/…cret""#) && masked.stdout.contains(#""p256dh":"…","auth":"…""#), "\(masked.stdout)")
    }
}
