import DigestCore
import DigestPreview
import Foundation
import Testing

/// A Web Push plaintext, as a Web Push outbox row holds it, renders exactly as the `webpush` section
/// of the FCM body of the same plan.
@Suite struct WebPushPreviewTests {
    static let device = Device(
        endpoint: "https://push.example.net/wpush/v2/subscriber-1",
        keys: .init(p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", auth: "BTBZMqHH6r4Tts7J_aSIgg"))

    @Test(arguments: [true, false])
    func aWebPushPlaintextRendersAsTheFCMSection(image: Bool) async throws {
        var plan = APNsPreviewTests.plan(image: image)
        plan.actions = [.init(id: "open", title: "Czytaj"), .init(id: "later", title: "Później")]
        let fcm = NotificationEncoder().message(for: plan, device: Device(token: "tok-web", platform: .web))
        let plaintext = try #require(WebPushEncoder().message(for: plan, device: Self.device)).plaintext

        let fcmMessage = try PreviewMessage(json: fcm)
        let expected = try await PreviewFixtures.pool.render(fcmMessage, scale: 1)
        #expect(expected.map(\.platform) == [.web, .web])
        for preview in expected {
            #expect(preview.text("title")?.lines.first?.hasPrefix("Twój tydzień") == true)
            #expect(!preview.notes.contains { $0.hasPrefix("image not readable") })
        }
        // A web notification's buttons are the first two actions that are not `open` (its own click).
        #expect(fcmMessage.content(for: .web)?.actions == ["Później"])

        let message = try PreviewMessage(json: plaintext)
        #expect(message == fcmMessage && message.notes.isEmpty)
        try await PreviewFixtures.expectSamePreviews(message, as: expected, of: "Web Push plaintext")
        // The web bytes of a plaintext are the plaintext's; of the FCM body, its data and section.
        #expect(MessageBudget.bytes(ofMessage: plaintext) == [.web: plaintext.count])
        #expect(MessageBudget.bytes(ofMessage: fcm) == [.web: NotificationEncoder().budgetBytes(for: plan, platform: .web)])
    }

    /// A plaintext is told apart from an FCM message and an APNs payload by its keys.
    @Test func shapesAreToldApart() throws {
        let plaintext = try PreviewMessage(json: PreviewFixtures.json(["title": "T", "body": "B", "tag": "digest-2026-W47", "deep_link": "x"]))
        #expect(plaintext.contents.map(\.platform) == [.web] && plaintext.notes.isEmpty)
        #expect(plaintext.content(for: .web)?.title == "T" && plaintext.content(for: .web)?.body == "B")
        // A bare FCM message object with a title beside its sections stays an FCM message.
        let bare = try PreviewMessage(json: PreviewFixtures.json(["title": "T", "android": ["data": ["title": "A", "body": "B"]]]))
        #expect(bare.contents.map(\.platform) == [.android] && bare.notes.contains("unknown section \"title\" ignored"))
        // An APNs payload with a title key of its own stays an APNs payload.
        let apns = try PreviewMessage(json: PreviewFixtures.json(["aps": ["alert": ["title": "T", "body": "B"]], "title": "x"]))
        #expect(apns.contents.map(\.platform) == [.ios])
        // Neither a title nor a body: nothing a browser would show, read as before.
        let neither = try PreviewMessage(json: PreviewFixtures.json(["tag": "x"]))
        #expect(neither.contents.map(\.platform) == [.android] && neither.notes.contains("unknown section \"tag\" ignored"))
    }
}
