import Foundation
import Testing

@testable import DigestCore

/// Standard Web Push messages: the plaintext byte for byte, the row's headers, the same notification
/// and keys as the FCM `webpush` message of the same plan, and the web budget at its edge.
@Suite("Web Push messages")
struct WebPushEncoderTests {
    static let encoder = WebPushEncoder()
    /// RFC 8291's example subscription keys.
    static let keys = Device.SubscriptionKeys(
        p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", auth: "BTBZMqHH6r4Tts7J_aSIgg")
    static let device = Device(endpoint: "https://push.example.net/wpush/v2/subscriber-1", keys: keys)
    /// `message_id` of ``device``: the first 16 bytes of the SHA-256 of its dedupe key, as a message
    /// built without a run gets (`2026-W47:u1:` and the SHA-256 of the endpoint).
    static let messageID = "124b21001ac7e522b209a50ba5b9cdc8"

    static let headers =
        #"{"urgency":"normal","topic":"digest-2026-W47","expires":1796025600,"p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4","auth":"BTBZMqHH6r4Tts7J_aSIgg"}"#

    /// The notification members of the FCM web message, then the keys of its `data`; UTF-8 as it is,
    /// escapes only for `"`, `\` and controls.
    static let golden: [String: String] = [
        "BigText": #"{"title":"Your week: 3 articles, 24 min","body":"2 days active\n• Actors\n• Macros","actions":[{"action":"later","title":"Later"},{"action":"share","title":"Share"}],"tag":"digest-2026-W47","message_id":"124b21001ac7e522b209a50ba5b9cdc8","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"}"#,
        "Image": #"{"title":"Your week: 3 articles, 24 min","body":"Top pick: Swift 6 \"strict\" concurrency","icon":"https://cdn.example/att/def.png","image":"https://cdn.example/att/abc.jpg","actions":[{"action":"later","title":"Later"},{"action":"share","title":"Share"}],"tag":"digest-2026-W47","message_id":"124b21001ac7e522b209a50ba5b9cdc8","digest_id":"2026-W47:u1","deep_link":"https://news.example/a1"}"#,
        "Default": #"{"title":"Your week: 3 articles, 24 min","body":"You read 3 articles in 24 min. Next up: Actors","actions":[{"action":"later","title":"Later"},{"action":"share","title":"Share"}],"tag":"digest-2026-W47","message_id":"124b21001ac7e522b209a50ba5b9cdc8","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"}"#,
        "Default-pl": #"{"title":"Twój tydzień: 3 artykuły, 18 minut","body":"Przeczytano 2 artykuły w 2 minuty. Zażółć gęślą jaźń…","actions":[{"action":"later","title":"Later"},{"action":"share","title":"Share"}],"tag":"digest-2026-W47","message_id":"124b21001ac7e522b209a50ba5b9cdc8","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"}"#,
        "BigText-ru": #"{"title":"Ваша неделя: 2 статьи, 7 минут","body":"Активность: 1 день\n• «Акторы» на практике\n• Макросы","actions":[{"action":"later","title":"Later"},{"action":"share","title":"Share"}],"tag":"digest-2026-W47","message_id":"124b21001ac7e522b209a50ba5b9cdc8","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"}"#,
    ]

    @Test(arguments: ["BigText", "Image", "Default", "Default-pl", "BigText-ru"])
    func goldenPlaintextAndHeaders(name: String) throws {
        let message = try #require(Self.encoder.message(for: APNsEncoderTests.plan(name), device: Self.device))
        #expect(String(decoding: message.plaintext, as: UTF8.self) == Self.golden[name])
        #expect(message.headers.json == Self.headers)
        #expect(try WebPushHeaders(json: Array(message.headers.json.utf8)) == message.headers)
        #expect(message.plaintext.count <= VariantPlanner.Configuration.ceiling(for: .web))
    }

    /// The plaintext is the FCM web message's `webpush.notification` (the same bytes) with the members
    /// of its top-level `data` after them: the same texts, images, actions, tag, ids and link.
    @Test(arguments: ["BigText", "Image", "Default", "Default-pl", "BigText-ru"])
    func theSameNotificationAndKeysAsTheFCMWebMessage(name: String) throws {
        let plan = APNsEncoderTests.plan(name)
        let fcm = String(decoding: NotificationEncoder().message(for: plan, device: Self.device), as: UTF8.self)
        let plaintext = String(decoding: try #require(Self.encoder.message(for: plan, device: Self.device)).plaintext, as: UTF8.self)
        // In the FCM body: `"data":{…},"webpush":{"headers":{…},"notification":{…},"fcm_options":{"link":…}}`.
        let data = try #require(fcm.range(of: #""data":"#)?.upperBound)
        let webpush = try #require(fcm.range(of: #","webpush":{"headers":"#))
        let notification = try #require(fcm.range(of: #","notification":"#)?.upperBound)
        let notificationEnd = try #require(fcm.range(of: #","fcm_options":{"link":"#)?.lowerBound)
        let dataObject = fcm[data..<webpush.lowerBound]
        #expect(plaintext == fcm[notification..<notificationEnd].dropLast() + "," + dataObject.dropFirst())
        #expect(dataObject.hasPrefix(#"{"message_id":"\#(Self.messageID)""#))
        // `deep_link` is what FCM's `fcm_options.link` opens.
        let link = try #require(fcm.range(of: #""fcm_options":{"link":"#)?.upperBound)
        #expect(plaintext.hasSuffix(#","deep_link":"# + fcm[link...].prefix { $0 != "}" } + "}"))
    }

    /// Every subscription of a plan gets the same plaintext but for its own `message_id`, and its own
    /// keys in the headers; encoding again gives the same bytes.
    @Test func perSubscriptionIDsAndKeysAndDeterminism() throws {
        let plan = APNsEncoderTests.plan("Image")
        let keys = [Self.keys, Device.SubscriptionKeys(p256dh: Self.keys.p256dh, auth: "AAAAAAAAAAAAAAAAAAAAAA")]
        let ids = ["0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"]
        let encoded = NotificationEncoder().encode(plan, platforms: [.android])  // the web parts are encoded on demand
        let messages = Self.encoder.messages(for: encoded, keys: keys, messageIDs: ids)
        #expect(messages == WebPushEncoder().messages(for: NotificationEncoder().encode(plan, platforms: [.web]), keys: keys, messageIDs: ids))
        for (message, id) in zip(messages, ids) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(message.plaintext)) as? [String: Any])
            #expect(object["message_id"] as? String == id)
        }
        #expect(messages.map(\.headers.auth) == ["BTBZMqHH6r4Tts7J_aSIgg", "AAAAAAAAAAAAAAAAAAAAAA"])
        #expect(String(decoding: messages[0].plaintext, as: UTF8.self).replacingOccurrences(of: ids[0], with: ids[1])
            == String(decoding: messages[1].plaintext, as: UTF8.self))
        // A device without subscription keys cannot be encrypted to: no message.
        #expect(Self.encoder.message(for: plan, device: Device(token: "tok-web", platform: .web)) == nil)
    }

    /// `Topic` is the week's collapse key, within RFC 8030's 32 base64url characters for every week;
    /// `expires` is the due time plus the TTL, the instant APNs' `apns-expiration` names.
    @Test func theTopicIsTheWeeksCollapseKeyAndTheExpiryTheAPNsOne() throws {
        for week in [PlanFixture.week, ISOWeek(year: 9999, week: 52)!, ISOWeek(year: 1, week: 1)!] {
            var plan = APNsEncoderTests.plan("BigText")
            plan.week = week
            let headers = try #require(Self.encoder.message(for: plan, device: Self.device)).headers
            #expect(headers.topic == "digest-\(week)" && WebPushHeaders.isValidTopic("digest-\(week)"))
            let apns = APNsEncoder(configuration: .init(topic: nil)).message(for: plan, device: Device(token: "tok-ios", platform: .ios))
            #expect(String(headers.expiresAt) == apns.headers.expiration.description && headers.urgency == .normal)
        }
    }

    /// The web budget counts the FCM web message (`data` and the `webpush` section), which holds every
    /// member of the plaintext and more: the plaintext is always the smaller, so a plan the planner
    /// keeps within the web ceiling (3,993 bytes, one aes128gcm record) has a plaintext within it too.
    /// At the edge: a plan whose FCM web bytes are exactly 3,993 is kept as it is; a little more link
    /// and the planner drops a bullet, as for any platform.
    @Test func thePlaintextAtTheWebLimit() throws {
        let limit = VariantPlanner.Configuration.ceiling(for: .web)
        #expect(limit == 3_993)
        /// The plan, its FCM web bytes counted apart from the planner, and its plaintext, for a link
        /// `linkPadding` bytes longer (counted twice by FCM, once by the plaintext) and a badge URL of
        /// `badge` bytes (once in each).
        func plan(linkPadding: Int, badge: Int = 1) throws -> (plan: NotificationPlan, fcm: Int, plaintext: [UInt8]) {
            var links = NotificationEncoder.Configuration()
            links.linkBase = "https://digest.example/" + String(repeating: "w", count: linkPadding)
            links.webBadge = String(repeating: "b", count: badge)
            let encoder = NotificationEncoder(configuration: links)
            var configuration = VariantPlanner.Configuration()
            configuration.byteBudget = 4_096
            let encoded = try VariantPlanner(configuration: configuration, encoder: encoder).planAndEncode(
                PlanFixture.digest(picks: 3), templates: shippedCatalog.localized(for: "en"), image: nil, platforms: [.web])
            let fcm = encoder.message(for: encoded.plan, device: Device(token: "t", platform: .web))
            let message = try #require(try JSONSerialization.jsonObject(with: Data(fcm)) as? [String: [String: Any]])["message"]
            let counted = try ["data", "webpush"].reduce(0) { sum, key in
                sum + (try JSONSerialization.data(withJSONObject: try #require(message?[key]), options: [.withoutEscapingSlashes])).count
            }
            let webPush = WebPushEncoder(encoder: encoder).messages(for: encoded, keys: [Self.keys], messageIDs: [Self.messageID])[0]
            return (encoded.plan, counted, webPush.plaintext)
        }
        let base = try plan(linkPadding: 0)
        #expect(base.plan.bytes == [.web: base.fcm])
        // The headers, the `notification` and `fcm_options` keys and the link a second time.
        #expect(base.fcm - base.plaintext.count > 100)
        let longer = try plan(linkPadding: 10)
        #expect(longer.plaintext.count == base.plaintext.count + 10 && longer.fcm == base.fcm + 20)

        // The link grows FCM's count by twos; the badge evens out the last byte.
        let badge = (limit - base.fcm) % 2 == 0 ? 1 : 2
        let padding = (limit - base.fcm - (badge - 1)) / 2
        let exact = try plan(linkPadding: padding, badge: badge)
        #expect(exact.plan.variant == .bigText && exact.plan.rules == base.plan.rules, "\(exact.plan.rules)")
        #expect(exact.fcm == limit && exact.plan.bytes == [.web: limit])
        #expect(exact.plaintext.count == base.plaintext.count + padding + badge - 1 && exact.plaintext.count < limit)

        let over = try plan(linkPadding: padding + 1, badge: badge)
        #expect(over.plan.rules == base.plan.rules + ["budget.bullets:2"], "\(over.plan.rules)")
        #expect(over.fcm <= limit && over.plan.bytes == [.web: over.fcm] && over.plaintext.count < limit)
    }
}
