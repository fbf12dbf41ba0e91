import DigestCore
@testable import DigestFakes
import Foundation
import Testing

/// The fakes check the digest's own keys (issue 42): `reply_key` 22 base64url characters, `picks` a
/// decimal string, at most two web buttons, `aps.category` a string; and take the run's messages with
/// a reply key on every platform.
@Suite struct DigestKeyRulesTests {
    static let key = "YNcbIObirHhuzDnv32qcLQ"

    static func android(_ data: String) -> [UInt8] {
        Array(#"{"message":{"token":"t","android":{"collapse_key":"c","data":{"message_id":"m",\#(data)}}}}"#.utf8)
    }

    static func accepted(_ body: [UInt8]) -> Bool {
        let full = (try? FCMRequestRules.fullCheck(body).get()) != nil
        // The quick check never accepts what the full check refuses.
        if !full { #expect(FCMRequestRules.quickCheck(body) == nil) }
        return full && (try? FCMRequestRules.check(body).get()) != nil
    }

    @Test func fcmDataKeys() {
        #expect(Self.accepted(Self.android(#""reply_key":"\#(Self.key)","picks":"5""#)))
        #expect(!Self.accepted(Self.android(#""reply_key":"short","picks":"5""#)))
        #expect(!Self.accepted(Self.android(#""reply_key":"YNcbIObirHhuzDnv32qcL=","picks":"5""#)))
        #expect(!Self.accepted(Self.android(#""picks":"five""#)))
        #expect(!Self.accepted(Self.android(#""picks":"-1""#)))
        #expect(!Self.accepted(Self.android(#""picks":5"#)), "FCM data values are strings")
        let ios = Array(#"{"message":{"token":"t","data":{"reply_key":"\#(Self.key)"},"apns":{"payload":{"aps":{"alert":"x","category":"digest"}}}}}"#.utf8)
        #expect(Self.accepted(ios))
        let badCategory = Array(#"{"message":{"token":"t","apns":{"payload":{"aps":{"alert":"x","category":7}}}}}"#.utf8)
        #expect(!Self.accepted(badCategory))
        let threeButtons = Array(
            #"{"message":{"token":"t","webpush":{"notification":{"title":"x","actions":[{"action":"a"},{"action":"b"},{"action":"c"}]}}}}"#.utf8)
        #expect(!Self.accepted(threeButtons))
    }

    @Test func apnsAndWebPushPayloads() {
        #expect(APNsRequestRules.digestKeysValid(Array(#"{"aps":{"alert":"x","category":"digest"},"reply_key":"\#(Self.key)"}"#.utf8)))
        #expect(!APNsRequestRules.digestKeysValid(Array(#"{"aps":{"alert":"x","category":1}}"#.utf8)))
        #expect(!APNsRequestRules.digestKeysValid(Array(#"{"aps":{"alert":"x"},"reply_key":"nope"}"#.utf8)))
        #expect(APNsRequestRules.digestKeysValid(Array(#"{"aps":{"alert":"x"}}"#.utf8)))
        #expect(FakeWebPushServer.digestKeysViolation(Array(#"{"title":"x","actions":[{},{}],"reply_key":"\#(Self.key)"}"#.utf8)) == nil)
        #expect(FakeWebPushServer.digestKeysViolation(Array(#"{"title":"x","actions":[{},{},{}]}"#.utf8)) != nil)
        #expect(FakeWebPushServer.digestKeysViolation(Array(#"{"title":"x","reply_key":"x"}"#.utf8)) != nil)
    }

    /// The encoder's messages with a reply key, `fewer_topic`, five buttons and an interruption level
    /// pass every fake's checks.
    @Test(arguments: Platform.allCases)
    func theEncodersMessagesPass(platform: Platform) throws {
        var configuration = NotificationEncoder.Configuration()
        configuration.iosInterruptionLevel = "passive"
        let encoder = NotificationEncoder(configuration: configuration, replyKeys: try ReplyKeys(secrets: ["a-reply-key-secret-of-32-bytes!!"]))
        var plan = NotificationPlan(
            digestID: "2026-W47:u1", week: ISOWeek(year: 2026, week: 47)!, userID: "u1", variant: .bigText, title: "Your week",
            body: "Body", image: nil, picks: ["a1", "a2"], rules: [], bytes: [:], arm: nil,
            actions: ["open", "later", "fewer", "pause", "off"].map { NotificationAction(id: $0, title: $0) }, deliverAt: 1_795_420_800)
        plan.fewerTopic = "swift"
        let body = encoder.message(for: plan, device: Device(token: "tok", platform: platform))
        #expect(FCMRequestRules.quickCheck(body) != nil, "\(String(decoding: body, as: UTF8.self))")
        #expect((try? FCMRequestRules.fullCheck(body).get()) != nil)
        switch platform {
        case .ios:
            let payload = APNsEncoder(configuration: .init(topic: nil), encoder: encoder).message(
                for: plan, device: Device(token: "tok", platform: .ios)).payload
            #expect(APNsRequestRules.digestKeysValid(payload))
        case .web, .android: break
        }
    }
}
