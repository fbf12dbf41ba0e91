import DigestCore
import DigestPreview
import Foundation
import Testing

/// A direct APNs message, as its payload alone (an APNs outbox row's `message`) or as
/// `{"headers":…,"payload":…}`, renders exactly as the `apns` section of the FCM body of the same plan.
@Suite struct APNsPreviewTests {
    static func plan(image: Bool) -> NotificationPlan {
        let hero = Rendition(url: "\(PreviewFixtures.attachmentsURL)/tall.png", mimeType: "image/png", width: 400, height: 600, byteCount: 1000)
        return NotificationPlan(
            digestID: "2026-W47:u1", week: ISOWeek(year: 2026, week: 47)!, userID: "u1", variant: image ? .image : .bigText,
            title: "Twój tydzień: 3 artykuły, 18 minut",
            body: image ? "Top: Zażółć gęślą jaźń" : "Aktywność: 3 dni\n• Аккторы на практике\n• Makra w Swift 6",
            image: image ? ImageRenditions(hero: hero, icon: nil) : nil, picks: ["a1"], rules: [], bytes: [:], arm: nil,
            actions: [], deliverAt: 1_795_420_800, topPickURL: "https://news.example/a1")
    }

    @Test(arguments: [true, false])
    func aDirectAPNsMessageRendersAsTheFCMSection(image: Bool) async throws {
        let plan = Self.plan(image: image)
        let device = Device(token: "tok-ios", platform: .ios)
        let fcm = NotificationEncoder().message(for: plan, device: device)
        let apns = APNsEncoder(configuration: .init(topic: "com.example.reader")).message(for: plan, device: device)
        let request = Array(#"{"headers":\#(apns.headers.json),"payload":"#.utf8) + apns.payload + Array("}".utf8)

        let fcmMessage = try PreviewMessage(json: fcm)
        let expected = try await PreviewFixtures.pool.render(fcmMessage, scale: 1)
        #expect(expected.map(\.platform) == [.ios, .ios])
        for preview in expected {
            #expect(preview.text("title")?.lines.first?.hasPrefix("Twój tydzień") == true)
            #expect(!preview.notes.contains { $0.hasPrefix("image not readable") })
        }
        #expect(expected.contains { $0.notes.isEmpty })

        for shape in [apns.payload, request] {
            let message = try PreviewMessage(json: shape)
            #expect(message == fcmMessage)
            try await PreviewFixtures.expectSamePreviews(message, as: expected, of: "APNs message")
            // The iOS budget counts the payload as APNs gets it, whichever shape carries it.
            #expect(MessageBudget.bytes(ofMessage: shape) == [.ios: apns.payload.count])
        }
        #expect(MessageBudget.bytes(ofMessage: fcm) == [.ios: apns.payload.count])
    }

    /// An APNs payload is not mistaken for an FCM body, nor an FCM body with a stray `payload` key for an
    /// APNs request.
    @Test func shapesAreToldApart() throws {
        let payload = try PreviewMessage(json: PreviewFixtures.json(["aps": ["alert": ["title": "T", "body": "B"]], "deep_link": "x"]))
        #expect(payload.contents.map(\.platform) == [.ios] && payload.notes.isEmpty)
        #expect(payload.content(for: .ios)?.title == "T")
        let request = try PreviewMessage(json: PreviewFixtures.json([
            "headers": ["apns-push-type": "alert"], "payload": ["aps": ["alert": "Just a body"]],
        ]))
        #expect(request.content(for: .ios)?.body == "Just a body")
        let fcm = try PreviewMessage(json: PreviewFixtures.json([
            "message": ["payload": ["aps": ["alert": "x"]], "webpush": ["notification": ["title": "T", "body": "B"]]],
        ]))
        #expect(fcm.contents.map(\.platform) == [.web])
        #expect(fcm.notes.contains("unknown section \"payload\" ignored"))
    }
}
