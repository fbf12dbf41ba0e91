import DigestCore
import DigestPreview
import Foundation
import Testing

/// The visible lines of each surface follow docs/007-rules-and-limits.md, "What devices show".
@Suite struct LineLimitTests {
    let pool = PreviewFixtures.pool

    func render(_ bytes: [UInt8], _ platform: Platform, _ state: PreviewState) async throws -> RenderedPreview {
        let content = try #require(try PreviewMessage(json: bytes).content(for: platform))
        return try await pool.render(content, state: state, scale: 1)
    }

    static let longBody = Array(repeating: "Ten tekst jest bardzo długi i na pewno nie zmieści się w jednej linii powiadomienia.", count: 8)
        .joined(separator: " ")

    @Test func androidCollapsedShowsOneTitleLineAndOneBodyLineEndingInEllipsis() async throws {
        let preview = try await render(try PreviewFixtures.bytes("bigtext-pl"), .android, .collapsed)
        let body = try #require(preview.text("body"))
        #expect(body.lines.count == 1)
        #expect(body.lines[0].hasSuffix("…"))
        #expect(body.ellipsized)
        #expect(!body.lines[0].contains("\n"))
        let title = try #require(preview.text("title"))
        #expect(title.lines.count == 1)
    }

    @Test func androidBigTextExpandedStopsAtNineLines() async throws {
        let bullets = (1...14).map { "• Artykuł numer \($0) o czymś ciekawym" }.joined(separator: "\n")
        let preview = try await render(PreviewFixtures.android(title: "Tydzień", body: bullets, type: "BigText"), .android, .expanded)
        let body = try #require(preview.text("body"))
        #expect(body.lines.count == 9)
        #expect(body.lines.last?.hasSuffix("…") == true)
        #expect(body.lines.first == "• Artykuł numer 1 o czymś ciekawym")
        #expect(body.fullLineCount == 14)
    }

    @Test func androidBigTextExpandedCutsTheFixtureAtItsTenthLine() async throws {
        let preview = try await render(try PreviewFixtures.bytes("bigtext-pl"), .android, .expanded)
        let body = try #require(preview.text("body"))
        #expect(body.lines.first == "Najwięcej czytałeś o Swift — oto coś dla Ciebie:")
        #expect(body.lines.count == 9)
        #expect(body.fullLineCount == 10, "the \"+2 więcej\" line falls off the expanded card")
        #expect(!body.lines.contains("+2 więcej"))
    }

    @Test func androidBigTextExpandedShowsAShortBodyWhole() async throws {
        let bytes = PreviewFixtures.android(title: "Tydzień", body: "Nagłówek:\n• Pierwszy\n• Drugi\n+3 więcej", type: "BigText")
        let preview = try await render(bytes, .android, .expanded)
        let body = try #require(preview.text("body"))
        #expect(!body.ellipsized)
        #expect(body.lines == ["Nagłówek:", "• Pierwszy", "• Drugi", "+3 więcej"])
    }

    @Test func androidBigPictureKeepsOneBodyLineExpanded() async throws {
        let preview = try await render(PreviewFixtures.android(title: "T", body: Self.longBody, type: "Image", imageURL: "https://cdn.test/att/hero.jpg"), .android, .expanded)
        #expect(preview.text("body")?.lines.count == 1)
        #expect(preview.notes.isEmpty)
    }

    @Test func iosCollapsedShowsFourBodyLinesAndTheExpandedViewMore() async throws {
        let message = PreviewFixtures.json(["message": ["apns": ["payload": ["aps": ["alert": ["title": "Twój tydzień", "body": Self.longBody]]]]]])
        let collapsed = try await render(message, .ios, .collapsed)
        let body = try #require(collapsed.text("body"))
        #expect(body.lines.count == 4)
        #expect(body.lines[3].hasSuffix("…"))
        let expanded = try await render(message, .ios, .expanded)
        let full = try #require(expanded.text("body"))
        #expect(full.lines.count > 4)
        #expect(!full.ellipsized)
    }

    @Test func chromeCutsTitleAt180CharactersAndTwoLines() async throws {
        let title = String(repeating: "Bardzo długi tytuł ", count: 20)
        let message = PreviewFixtures.json(["message": ["webpush": ["notification": ["title": title, "body": Self.longBody]]]])
        let collapsed = try await render(message, .web, .collapsed)
        #expect(collapsed.text("title")?.lines.count == 2)
        #expect(collapsed.text("title")?.lines.last?.hasSuffix("…") == true)
        #expect(collapsed.text("body")?.lines.count == 1)
        #expect(collapsed.notes.contains { $0.contains("180 characters") })
        let expanded = try await render(message, .web, .expanded)
        #expect(expanded.text("body")?.lines.count == 4)
        #expect(expanded.notes.contains { $0.contains("600 characters") }, "the body is longer than Chrome keeps")
    }

    @Test func chineseBreaksWithoutSpacesAndEmojiSequencesStayWhole() async throws {
        let family = "👨‍👩‍👧‍👦"
        let title = "你的一周" + String(repeating: family, count: 30)
        let body = String(repeating: "深入理解并发模型从结构化并发到隔离检查", count: 10)
        let message = PreviewFixtures.json(["message": ["apns": ["payload": ["aps": ["alert": ["title": title, "body": body]]]]]])
        let preview = try await render(message, .ios, .collapsed)
        let titleLine = try #require(preview.text("title")?.lines.first)
        #expect(titleLine.hasSuffix("…"))
        let shown = String(titleLine.dropLast())
        #expect(title.hasPrefix(shown), "the cut falls on a grapheme boundary")
        #expect(shown.hasSuffix(family))
        let lines = try #require(preview.text("body")?.lines)
        #expect(lines.count == 4)
        #expect(lines.allSatisfy { !$0.isEmpty && !$0.contains(" ") })
    }

    @Test func rightToLeftTextIsLaidOut() async throws {
        let preview = try await render(try PreviewFixtures.bytes("default-ar"), .android, .expanded)
        let body = try #require(preview.text("body"))
        #expect(body.lines.joined(separator: " ").contains("سويفت"))
        #expect(preview.notes.isEmpty)
    }

    @Test(arguments: [Platform.android, .ios, .web])
    func theLimitsTableHasEverySurfaceAndState(_ platform: Platform) {
        for style in AndroidStyle.allCases {
            for state in PreviewState.allCases {
                let limits = LineLimits.limits(platform: platform, style: style, state: state)
                #expect(limits.titleLines >= 1 && limits.bodyLines >= 1)
                #expect(!limits.source.isEmpty)
            }
        }
        #expect(LineLimits.limits(platform: .android, style: .bigText, state: .collapsed).bodyLines == 1)
        #expect(LineLimits.limits(platform: .web, style: .standard, state: .expanded).bodyLines == 4)
    }
}
