import DigestCore
import DigestPreview
import Foundation
import Testing

/// Messages that are wrong in some way still render, with the problem drawn as a note.
@Suite struct BadInputTests {
    let pool = PreviewFixtures.pool

    func renderAll(_ bytes: [UInt8]) async throws -> [RenderedPreview] {
        let previews = try await pool.render(try PreviewMessage(json: bytes), scale: 1)
        for preview in previews {
            #expect(PixelImage(png: preview.png) != nil, "\(preview.fileName) is a PNG")
        }
        return previews
    }

    @Test func missingTitleRendersWithANote() async throws {
        let previews = try await renderAll(PreviewFixtures.android(title: nil, body: "Only a body"))
        #expect(previews.count == 2)
        for preview in previews {
            #expect(preview.notes.contains("title missing"))
            #expect(preview.text("title") == nil)
            #expect(preview.text("body")?.lines == ["Only a body"])
        }
    }

    @Test func unknownPlatformSectionIsNoted() async throws {
        let bytes = PreviewFixtures.json([
            "message": ["huawei": ["x": 1], "webpush": ["notification": ["title": "T", "body": "B"]]],
        ])
        let previews = try await renderAll(bytes)
        #expect(previews.map(\.platform) == [.web, .web])
        #expect(previews.allSatisfy { $0.notes.contains("unknown section \"huawei\" ignored") })
    }

    @Test func onlyAnUnknownSectionStillDrawsSomething() async throws {
        let previews = try await renderAll(PreviewFixtures.json(["message": ["huawei": ["title": "T"]]]))
        #expect(previews.count == 2)
        #expect(previews.allSatisfy { $0.notes.contains { $0.contains("no android, apns or webpush section") } })
    }

    @Test(arguments: [
        "https://elsewhere.example/picture.jpg", "https://cdn.test/att/missing.jpg", "https://cdn.test/att/broken.jpg",
        "https://cdn.test/att/../secret.jpg", "file:///etc/passwd",
    ])
    func unreadableImageDrawsAPlaceholder(_ url: String) async throws {
        let previews = try await renderAll(PreviewFixtures.android(title: "T", body: "B", type: "Image", imageURL: url))
        let expanded = try #require(previews.first { $0.state == .expanded })
        #expect(expanded.notes.contains { $0.hasPrefix("image not readable") })
    }

    @Test func aTenThousandCharacterBodyRendersQuickly() async throws {
        let body = String(repeating: "Zażółć gęślą jaźń 🙂 ", count: 500)
        #expect(body.count >= 10_000)
        let message = PreviewFixtures.json([
            "message": [
                "android": ["data": ["title": "T", "body": body, "type": "BigText"]],
                "apns": ["payload": ["aps": ["alert": ["title": "T", "body": body]]]],
                "webpush": ["notification": ["title": "T", "body": body]],
            ],
        ])
        let previews = try await renderAll(message)
        // Timed on the render thread itself: waiting behind other suites' renders does not count.
        let parsed = try PreviewMessage(json: message)
        let elapsed = try await pool.withRenderer { renderer in
            let started = ContinuousClock.now
            _ = try renderer.renderAll(parsed, scale: 1)
            return started.duration(to: .now)
        }
        #expect(elapsed < .seconds(5))
        #expect(previews.count == 6)
        let android = try #require(previews.first { $0.platform == .android && $0.state == .collapsed })
        #expect(android.text("body")?.lines.count == 1)
        #expect(android.notes.contains { $0.contains("1024 UTF-16 units") })
        let ios = try #require(previews.first { $0.platform == .ios && $0.state == .expanded })
        #expect(ios.text("body")?.lines.count == 40)
        #expect(ios.notes.contains { $0.contains("preview stops") })
    }

    @Test func nonStringDataValuesAndBadSectionsAreNoted() async throws {
        let bytes = PreviewFixtures.json([
            "message": ["android": ["data": ["title": "T", "body": "B", "badge": 3]], "apns": "nonsense"],
        ])
        let previews = try await renderAll(bytes)
        #expect(previews.contains { $0.notes.contains { $0.contains("\"badge\" is not a string") } })
        #expect(previews.contains { $0.platform == .ios && $0.notes.contains("apns section is not an object") })
    }

    @Test func iosImageWithoutMutableContentIsNoted() async throws {
        let bytes = PreviewFixtures.json([
            "message": ["apns": ["payload": ["aps": ["alert": ["title": "T", "body": "B"]]], "fcm_options": ["image": "https://cdn.test/att/hero.jpg"]]],
        ])
        let previews = try await renderAll(bytes)
        #expect(previews.allSatisfy { $0.notes.contains { $0.contains("mutable-content") } })
    }

    @Test(arguments: ["", "not json", "[1,2]", "\"text\"", "{\"message\":"])
    func bytesThatAreNotAMessageObjectThrow(_ text: String) {
        #expect(throws: PreviewError.self) { try PreviewMessage(json: Array(text.utf8)) }
    }

    @Test func emptyMessageObjectRendersANote() async throws {
        let previews = try await renderAll(Array("{}".utf8))
        #expect(previews.count == 2)
        #expect(previews.allSatisfy { $0.notes.contains("title missing") && $0.notes.contains("body missing") })
    }
}
