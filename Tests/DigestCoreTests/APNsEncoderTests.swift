import Foundation
import Testing

@testable import DigestCore

/// Direct APNs requests: the payload byte for byte, the headers, the 4,096-byte budget, and the same
/// `aps` and keys as the FCM `apns` section of the same plan.
@Suite("APNs messages")
struct APNsEncoderTests {
    static let encoder = APNsEncoder(configuration: .init(topic: "com.example.reader"))
    static let device = Device(token: "tok-ios", platform: .ios)
    /// `message_id` of `tok-ios` (the FCM goldens' iOS id), and the `apns-id` made of it: digit 13
    /// `dc15` → `8c15` (version 8), digit 17 `1113` → `9113` (variant 10).
    static let messageID = "3552dd109f95dc151113148a7e73a006"
    static let apnsID = "3552dd10-9f95-8c15-9113-148a7e73a006"

    /// Polish and Russian plans: UTF-8 texts as they are, escapes only for `"`, `\` and controls.
    static func plan(_ name: String) -> NotificationPlan {
        var plan: NotificationPlan
        switch name {
        case "Default-pl":
            plan = GoldenMessageTests.plan(.defaultText)
            plan.title = "Twój tydzień: 3 artykuły, 18 minut"
            plan.body = "Przeczytano 2 artykuły w 2 minuty. Zażółć gęślą jaźń…"
        case "BigText-ru":
            plan = GoldenMessageTests.plan(.bigText)
            plan.title = "Ваша неделя: 2 статьи, 7 минут"
            plan.body = "Активность: 1 день\n• «Акторы» на практике\n• Макросы"
        default:
            plan = GoldenMessageTests.plan(Variant(rawValue: name)!)
        }
        return plan
    }

    static let headers =
        #"{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1796025600","apns-collapse-id":"digest-2026-W47","apns-id":"3552dd10-9f95-8c15-9113-148a7e73a006","apns-topic":"com.example.reader"}"#

    static let golden: [String: String] = [
        "BigText": #"{"aps":{"alert":{"title":"Your week: 3 articles, 24 min","body":"2 days active\n• Actors\n• Macros"},"category":"digest","thread-id":"weekly-digest","mutable-content":1},"message_id":"3552dd109f95dc151113148a7e73a006","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"}"#,
        "Image": #"{"aps":{"alert":{"title":"Your week: 3 articles, 24 min","body":"Top pick: Swift 6 \"strict\" concurrency"},"category":"digest","thread-id":"weekly-digest","mutable-content":1},"imageUrl":"https://cdn.example/att/abc.jpg","message_id":"3552dd109f95dc151113148a7e73a006","digest_id":"2026-W47:u1","deep_link":"https://news.example/a1"}"#,
        "Default": #"{"aps":{"alert":{"title":"Your week: 3 articles, 24 min","body":"You read 3 articles in 24 min. Next up: Actors"},"category":"digest","thread-id":"weekly-digest","mutable-content":1},"message_id":"3552dd109f95dc151113148a7e73a006","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"}"#,
        "Default-pl": #"{"aps":{"alert":{"title":"Twój tydzień: 3 artykuły, 18 minut","body":"Przeczytano 2 artykuły w 2 minuty. Zażółć gęślą jaźń…"},"category":"digest","thread-id":"weekly-digest","mutable-content":1},"message_id":"3552dd109f95dc151113148a7e73a006","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"}"#,
        "BigText-ru": #"{"aps":{"alert":{"title":"Ваша неделя: 2 статьи, 7 минут","body":"Активность: 1 день\n• «Акторы» на практике\n• Макросы"},"category":"digest","thread-id":"weekly-digest","mutable-content":1},"message_id":"3552dd109f95dc151113148a7e73a006","digest_id":"2026-W47:u1","deep_link":"https://digest.example/weekly/2026-W47"}"#,
    ]

    @Test(arguments: ["BigText", "Image", "Default", "Default-pl", "BigText-ru"])
    func goldenPayloadAndHeaders(name: String) throws {
        let message = Self.encoder.message(for: Self.plan(name), device: Self.device)
        #expect(String(decoding: message.payload, as: UTF8.self) == Self.golden[name])
        #expect(message.headers.json == Self.headers)
        #expect(message.headers.fields.map(\.name) == [
            "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id", "apns-id", "apns-topic",
        ])
        #expect(try APNsHeaders(json: Array(message.headers.json.utf8)) == message.headers)
        // What the iOS budget counts is this payload, to the byte.
        #expect(NotificationEncoder().budgetBytes(for: Self.plan(name), platform: .ios) == message.payload.count)
    }

    /// The direct payload is the FCM `apns.payload` (the same bytes, `aps` and `imageUrl`) with the
    /// members of the FCM message's top-level `data` after it, which is what FCM puts beside `aps`; the
    /// FCM headers are the direct ones without `apns-id` and `apns-topic`.
    @Test(arguments: ["BigText", "Image", "Default", "Default-pl", "BigText-ru"])
    func theSameAPSAndKeysAsTheFCMSection(name: String) throws {
        let plan = Self.plan(name)
        let fcm = String(decoding: NotificationEncoder().message(for: plan, device: Self.device), as: UTF8.self)
        let direct = String(decoding: Self.encoder.message(for: plan, device: Self.device).payload, as: UTF8.self)
        // In the FCM body: `"data":{…},"apns":{"headers":{…},"payload":{…}` then `,"fcm_options"` or `}`.
        let data = try #require(fcm.range(of: #""data":"#)?.upperBound)
        let apns = try #require(fcm.range(of: #","apns":{"headers":"#))
        let payloadStart = try #require(fcm.range(of: #","payload":"#)?.upperBound)
        // The payload ends at the section's `fcm_options` (Image) or at the section's end.
        let rest = fcm[payloadStart...]
        let payloadEnd = try #require(
            rest.range(of: #","fcm_options":{"image""#)?.lowerBound ?? rest.range(of: #"},"fcm_options":{"analytics_label""#)?.lowerBound)
        let payload = rest[..<payloadEnd]
        let dataObject = fcm[data..<apns.lowerBound]
        #expect(direct == payload.dropLast() + "," + dataObject.dropFirst())
        #expect(direct.hasPrefix(#"{"aps":{"alert":{"title":"# + JSONWriter.quoted(plan.title)))

        let headers = try #require(fcm.range(of: #"{"headers":"#)?.upperBound)
        let fcmHeaders = fcm[headers..<fcm.range(of: #","payload":"#)!.lowerBound]
        #expect(Self.headers.hasPrefix(fcmHeaders.dropLast() + ","))
    }

    /// The iOS budget counts the direct payload: a plan whose payload is exactly 4,096 bytes is kept as
    /// it is (its FCM body's `data` and `apns.payload` are a byte more together, one `{}` pair and a
    /// comma); one more byte of link and the planner drops a bullet, as for any platform.
    @Test func thePayloadAtAPNsLimit() throws {
        let limit = VariantPlanner.Configuration.ceiling(for: .ios)
        #expect(limit == 4096)
        func plan(linkPadding: Int) throws -> (plan: NotificationPlan, message: APNsMessage) {
            var links = NotificationEncoder.Configuration()
            links.linkBase = "https://digest.example/" + String(repeating: "w", count: linkPadding)
            let encoder = NotificationEncoder(configuration: links)
            var configuration = VariantPlanner.Configuration()
            configuration.byteBudget = limit
            let encoded = try VariantPlanner(configuration: configuration, encoder: encoder).planAndEncode(
                PlanFixture.digest(picks: 3), templates: shippedCatalog.localized(for: "en"), image: nil, platforms: [.ios])
            let apns = APNsEncoder(configuration: .init(topic: "com.example.reader"), encoder: encoder)
            return (encoded.plan, apns.messages(for: encoded, devices: [Self.device])[0])
        }
        let base = try plan(linkPadding: 0)
        #expect(base.plan.bytes == [.ios: base.message.payload.count])
        #expect(try plan(linkPadding: 10).message.payload.count == base.message.payload.count + 10)

        let atLimit = try plan(linkPadding: limit - base.message.payload.count)
        #expect(atLimit.plan.variant == .bigText && atLimit.plan.rules == base.plan.rules, "\(atLimit.plan.rules)")
        #expect(atLimit.message.payload.count == limit && atLimit.plan.bytes == [.ios: limit])

        let over = try plan(linkPadding: limit - base.message.payload.count + 1)
        #expect(over.plan.variant == .bigText)
        #expect(over.plan.rules == base.plan.rules + ["budget.bullets:2"], "\(over.plan.rules)")
        #expect(over.message.payload.count <= limit && over.plan.bytes == [.ios: over.message.payload.count])
    }

    /// Every device of a plan gets the same payload but for its own `message_id`, and its own
    /// `apns-id` and `apns-topic`; encoding again gives the same bytes.
    @Test func perDeviceIDsAndDeterminism() throws {
        let plan = Self.plan("Image")
        let devices = [
            Device(token: "aa01", platform: .ios), Device(token: "bb02", platform: .ios, topic: "com.example.other"),
        ]
        let ids = ["0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"]
        let encoded = NotificationEncoder().encode(plan, platforms: [.android])  // the iOS parts are encoded on demand
        let messages = Self.encoder.messages(for: encoded, devices: devices, messageIDs: ids)
        let again = APNsEncoder(configuration: .init(topic: "com.example.reader"))
            .messages(for: NotificationEncoder().encode(plan, platforms: [.ios]), devices: devices, messageIDs: ids)
        #expect(messages == again)
        for (message, id) in zip(messages, ids) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(message.payload)) as? [String: Any])
            #expect(object["message_id"] as? String == id)
            #expect(message.headers.id == APNsHeaders.id(messageID: id))
        }
        #expect(messages.map(\.headers.topic) == ["com.example.reader", "com.example.other"])
        #expect(String(decoding: messages[0].payload, as: UTF8.self).replacingOccurrences(of: ids[0], with: ids[1])
            == String(decoding: messages[1].payload, as: UTF8.self))
        #expect(messages[0].headers.id == "01234567-89ab-8def-8123-456789abcdef")
        #expect(messages[1].headers.id == "fedcba98-7654-8210-bedc-ba9876543210")

        var quiet = APNsEncoder.Configuration(topic: "com.example.reader")
        quiet.sendsID = false
        let withoutID = APNsEncoder(configuration: quiet).message(for: plan, device: Self.device)
        #expect(withoutID.headers.id == nil && !withoutID.headers.json.contains("apns-id"))
        #expect(withoutID.payload == Self.encoder.message(for: plan, device: Self.device).payload)
    }

    /// The earlier message id, made of the dedupe key, is what `messages(for:devices:)` sends.
    @Test func theDefaultMessageIDIsTheDedupeKeys() {
        let message = Self.encoder.message(for: Self.plan("Default"), device: Self.device)
        let key = OutboxMessage.dedupeKey(week: PlanFixture.week, userID: "u1", token: "tok-ios")
        #expect(OutboxMessage.messageID(dedupeKey: key) == Self.messageID)
        #expect(message.headers.id == Self.apnsID)
    }

    @Test(arguments: ["3552dd109f95dc151113148a7e73a006", "00000000000000000000000000000000", "not hex", "ABCDEF0123456789ABCDEF0123456789", ""])
    func apnsIDIsACanonicalVersion8UUID(messageID: String) {
        let id = APNsHeaders.id(messageID: messageID)
        #expect(APNsHeaders.isCanonicalUUID(id), "\(id)")
        let digits = Array(id.replacingOccurrences(of: "-", with: ""))
        #expect(digits[12] == "8")
        #expect(["8", "9", "a", "b"].contains(digits[16]))
        #expect(APNsHeaders.id(messageID: messageID) == id)
        // A message id of 32 lower-case hex digits shows through, but for the six version and variant bits.
        if messageID.count == 32 && messageID == messageID.lowercased() {
            #expect(digits.enumerated().filter { ![12, 16].contains($0.offset) }.map(\.element)
                == Array(messageID).enumerated().filter { ![12, 16].contains($0.offset) }.map(\.element))
        }
    }

    @Test func theCollapseIDIsTheWeeksAndFitsAPNs() throws {
        for week in [PlanFixture.week, ISOWeek(year: 9999, week: 52)!, ISOWeek(year: 1, week: 1)!] {
            var plan = Self.plan("BigText")
            plan.week = week
            let headers = Self.encoder.message(for: plan, device: Self.device).headers
            #expect(headers.collapseID == "digest-\(week)")
            #expect(try #require(headers.collapseID).utf8.count <= APNsHeaders.collapseIDLimit)
        }
        var headers = Self.encoder.message(for: Self.plan("BigText"), device: Self.device).headers
        headers.collapseID = String(repeating: "c", count: 64)
        #expect(try APNsHeaders(json: Array(headers.json.utf8)) == headers)
        headers.collapseID = String(repeating: "c", count: 65)
        #expect(throws: APNsHeadersError.self) { try APNsHeaders(json: Array(headers.json.utf8)) }
    }

    @Test(arguments: [
        "", "[]", #"{"apns-priority":"5","apns-expiration":"1"}"#,
        #"{"apns-push-type":"alert","apns-expiration":"1"}"#,
        #"{"apns-push-type":"alert","apns-priority":"7","apns-expiration":"1"}"#,
        #"{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"-1"}"#,
        #"{"apns-push-type":"alert","apns-priority":"5","apns-expiration":1}"#,
        #"{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1","apns-id":"3552DD10-9F95-8C15-9113-148A7E73A006"}"#,
        #"{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1","apns-id":"3552dd109f958c159113148a7e73a006"}"#,
        #"{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1","apns-topic":""}"#,
        #"{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1","authorization":"bearer x"}"#,
    ])
    func storedHeadersThatAreWrongThrow(json: String) {
        #expect(throws: APNsHeadersError.self) { try APNsHeaders(json: Array(json.utf8)) }
    }

    @Test func storedHeadersWithOnlyTheRequiredOnesRead() throws {
        let headers = try APNsHeaders(json: Array(#"{"apns-expiration":"0","apns-priority":"10","apns-push-type":"alert"}"#.utf8))
        #expect(headers == APNsHeaders(priority: 10, expiration: 0, collapseID: nil))
        #expect(headers.json == #"{"apns-push-type":"alert","apns-priority":"10","apns-expiration":"0"}"#)
    }
}
