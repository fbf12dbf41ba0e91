import DigestCore
import DigestPreview
import Foundation
import Testing

/// The buttons each platform's message carries, drawn where the device draws them: Android's and
/// Chrome's expanded notification in a row of their titles, the iOS long-press view as the list of
/// its category's registered actions under the notification, `off` in red. Collapsed, none.
@Suite struct ActionPreviewTests {
    static let actions: [NotificationAction] = [
        .init(id: "open", title: "Czytaj"), .init(id: "fewer", title: "Mniej takich"),
        .init(id: "pause", title: "Wstrzymaj na 4 tygodnie"),
    ]

    static func plan() -> NotificationPlan {
        var plan = APNsPreviewTests.plan(image: false)
        plan.actions = actions
        return plan
    }

    static func message(_ platform: Platform, configuration: NotificationEncoder.Configuration = .init()) throws -> PreviewMessage {
        try PreviewMessage(
            json: NotificationEncoder(configuration: configuration).message(for: plan(), device: Device(token: "t", platform: platform)))
    }

    static func actionLines(_ preview: RenderedPreview) -> [String] {
        preview.texts.filter { $0.role == "action" }.flatMap(\.lines)
    }

    /// Premultiplied ARGB, opaque canvas: the channels of one pixel.
    static func rgb(_ pixel: UInt32) -> (r: Int, g: Int, b: Int) {
        (Int((pixel >> 16) & 0xFF), Int((pixel >> 8) & 0xFF), Int(pixel & 0xFF))
    }

    /// Rows (1×) holding a pixel of iOS's destructive red (0xFF3B30, anti-aliased text kept within a
    /// margin) right of the app icon (red too, x 30…68) and within the list's 250 pt.
    static func redRows(_ image: PixelImage) -> [Int] {
        (0..<image.height).filter { y in
            (72..<(16 + 250)).contains { x in
                let (r, g, b) = rgb(image.pixels[y * image.width + x])
                return r > 200 && g < 110 && b < 100
            }
        }
    }

    @Test func iOSExpandedListsTheCategorysActionsWithOffInRed() async throws {
        let message = try Self.message(.ios)
        let content = try #require(message.content(for: .ios))
        #expect(content.category == "digest" && content.actions.isEmpty, "an APNs message carries the category's id only")
        let previews = try await PreviewFixtures.pool.render(message, scale: 1)
        let collapsed = try #require(previews.first { $0.state == .collapsed })
        let expanded = try #require(previews.first { $0.state == .expanded })
        #expect(Self.actionLines(collapsed).isEmpty)
        // The registration of docs/014: every button a run may choose, in its order.
        #expect(Self.actionLines(expanded) == ["Read", "Later", "Fewer like this", "Pause for 4 weeks", "Stop the weekly digest"])
        #expect(!expanded.notes.contains { $0.contains("category") })

        let collapsedPixels = try #require(PixelImage(png: collapsed.png))
        let pixels = try #require(PixelImage(png: expanded.png))
        var uncategorized = content
        uncategorized.category = nil
        let plain = try #require(PixelImage(png: try await PreviewFixtures.pool.render(uncategorized, state: .expanded, scale: 1).png))
        // Five 44 pt rows and the 8 pt gap under the card.
        #expect(pixels.height - plain.height == 5 * 44 + 8)
        #expect(Self.redRows(plain).isEmpty)
        #expect(Self.redRows(collapsedPixels).isEmpty)
        // Red only in the last row (`off`), whose text sits 11 pt below its top.
        let red = Self.redRows(pixels)
        let lastRowTop = pixels.height - 12 - 44
        #expect(!red.isEmpty)
        #expect(red.allSatisfy { $0 > lastRowTop && $0 < lastRowTop + 44 }, "red rows \(red), last row from \(lastRowTop)")
        // The list is a light rounded panel on the wallpaper, left-aligned under the card, 250 pt wide.
        let panel = Self.rgb(pixels.pixels[(lastRowTop + 3) * pixels.width + 16 + 200])
        let wallpaper = Self.rgb(pixels.pixels[(lastRowTop + 3) * pixels.width + 16 + 300])
        #expect(panel.r > 220 && panel.g > 220 && panel.b > 220, "\(panel)")
        #expect(wallpaper.r < 220, "\(wallpaper)")
    }

    @Test func iOSDrawsTheCategoryTheConfigurationRegistersAndNotesAnUnknownOne() async throws {
        var encoder = NotificationEncoder.Configuration()
        encoder.apnsCategory = "WEEKLY_DIGEST"
        let message = try Self.message(.ios, configuration: encoder)
        let content = try #require(message.content(for: .ios))

        let renderer = PreviewRenderer(configuration: PreviewFixtures.configuration)
        let unknown = try renderer.render(content, state: .expanded, scale: 1)
        #expect(Self.actionLines(unknown).isEmpty)
        #expect(unknown.notes.contains("aps.category \"WEEKLY_DIGEST\" is not a category the preview knows: its buttons are not drawn"))
        #expect(!(try renderer.render(content, state: .collapsed, scale: 1)).notes.contains { $0.contains("category") })

        var configuration = PreviewFixtures.configuration
        configuration.iosCategories["WEEKLY_DIGEST"] = [
            PreviewAction(id: "open", title: "Czytaj"), PreviewAction(id: "off", title: "Wyłącz", destructive: true),
        ]
        let known = try PreviewRenderer(configuration: configuration).render(content, state: .expanded, scale: 1)
        #expect(Self.actionLines(known) == ["Czytaj", "Wyłącz"])
        #expect(known.notes.isEmpty)
        let pixels = try #require(PixelImage(png: known.png))
        #expect(Self.redRows(pixels).allSatisfy { $0 > pixels.height - 12 - 44 })
        #expect(!Self.redRows(pixels).isEmpty)

        // A category that is not a string is noted where the message is read.
        let bad = try PreviewMessage(json: PreviewFixtures.json(["aps": ["alert": ["title": "T", "body": "B"], "category": 5]]))
        #expect(bad.content(for: .ios)?.category == nil)
        #expect(bad.content(for: .ios)?.notes == ["aps.category is not a string: iOS shows no buttons"])

        // No category: iOS shows no buttons.
        var none = content
        none.category = nil
        #expect(Self.actionLines(try renderer.render(none, state: .expanded, scale: 1)).isEmpty)
    }

    @Test func webExpandedDrawsItsButtonsTheFirstTwoThatAreNotOpen() async throws {
        let message = try Self.message(.web)
        let content = try #require(message.content(for: .web))
        #expect(content.actions == ["Mniej takich", "Wstrzymaj na 4 tygodnie"])
        var bare = content
        bare.actions = []
        let collapsed = try await PreviewFixtures.pool.render(content, state: .collapsed, scale: 1)
        let expanded = try await PreviewFixtures.pool.render(content, state: .expanded, scale: 1)
        let withoutButtons = try await PreviewFixtures.pool.render(bare, state: .expanded, scale: 1)
        #expect(Self.actionLines(collapsed).isEmpty)
        // Chrome uppercases them; a button is at most 150 px, a longer title ends in "…".
        #expect(Self.actionLines(expanded) == ["MNIEJ TAKICH", "WSTRZYMAJ NA 4…"])
        // Collapsed draws no buttons: the same pixels as without them; expanded, a 36 px row more,
        // in Chrome's blue.
        #expect(try PixelImage(png: collapsed.png) == PixelImage(png: try await PreviewFixtures.pool.render(bare, state: .collapsed, scale: 1).png))
        let pixels = try #require(PixelImage(png: expanded.png)), plain = try #require(PixelImage(png: withoutButtons.png))
        #expect(pixels.height - plain.height == 8 + 36)
        let blue = (pixels.height - 8 - 14 - 36..<pixels.height - 8).contains { y in
            (0..<pixels.width).contains { x in
                let (r, g, b) = Self.rgb(pixels.pixels[y * pixels.width + x])
                return b > 180 && r < 120 && g < 170
            }
        }
        #expect(blue)
    }

    @Test func androidExpandedDrawsItsActionRow() async throws {
        let message = try Self.message(.android)
        let content = try #require(message.content(for: .android))
        #expect(content.actions == Self.actions.map(\.title))
        let previews = try await PreviewFixtures.pool.render(message, scale: 1)
        #expect(Self.actionLines(previews[0]).isEmpty)
        // Android's buttons are 110 dp: a longer title ends in "…".
        #expect(Self.actionLines(previews[1]) == ["Czytaj", "Mniej takich", "Wstrzymaj na 4…"])

        // More than three: the notification shows the first three, and the preview says so.
        let four = #"[{"id":"a","title":"A"},{"id":"b","title":"B"},{"id":"c","title":"C"},{"id":"d","title":"D"}]"#
        let many = try PreviewMessage(
            json: PreviewFixtures.json(["message": ["android": ["data": ["title": "T", "body": "B", "type": "Default", "actions": four]]]]))
        let expanded = try await PreviewFixtures.pool.render(try #require(many.content(for: .android)), state: .expanded, scale: 1)
        #expect(Self.actionLines(expanded) == ["A", "B", "C"])
        #expect(expanded.notes == ["4 android actions: a notification shows the first 3"])
    }
}
