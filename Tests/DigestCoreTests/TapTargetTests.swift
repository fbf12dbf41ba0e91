import Foundation
import Testing

@testable import DigestCore

/// What tapping a notification opens: an Image message ("Top pick: X") opens X's own page, every other
/// message the weekly page; a top pick's URL that is not https, or does not parse, opens the weekly page.
@Suite("Tap target")
struct TapTargetTests {
    static let weekly = "https://digest.example/weekly/2026-W47"

    /// The `deep_link` of the top-level data and the web `fcm_options.link` of `plan`'s messages.
    static func links(_ plan: NotificationPlan) throws -> (data: String, web: String) {
        let body = NotificationEncoder().message(for: plan, device: Device(token: "t", platform: .web))
        let message = try #require(
            (try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["message"] as? [String: Any])
        let data = try #require(message["data"] as? [String: String])
        let options = try #require((message["webpush"] as? [String: Any])?["fcm_options"] as? [String: String])
        return (try #require(data["deep_link"]), try #require(options["link"]))
    }

    static func digest(picks: Int, topPickURL: String) -> WeeklyDigest {
        var digest = PlanFixture.digest(picks: picks)
        var articles = digest.picks
        articles[0].url = topPickURL
        digest = WeeklyDigest(reader: digest.reader, window: digest.window, stats: digest.stats, picks: articles)
        return digest
    }

    @Test(arguments: [1, 3])
    func imageOpensTheTopPick(picks: Int) throws {
        let plan = try PlanFixture.plan(PlanFixture.digest(picks: picks), image: .ready(PlanFixture.renditions))
        #expect(plan.variant == .image)
        #expect(plan.topPickURL == "https://news.example/a1")
        let links = try Self.links(plan)
        #expect(links.data == "https://news.example/a1")
        #expect(links.web == "https://news.example/a1")
    }

    @Test(arguments: [(3, Variant.bigText), (1, Variant.defaultText)])
    func textVariantsOpenTheWeeklyPage(picks: Int, variant: Variant) throws {
        let plan = try PlanFixture.plan(PlanFixture.digest(picks: picks))
        #expect(plan.variant == variant)
        #expect(plan.topPickURL == "https://news.example/a1")
        let links = try Self.links(plan)
        #expect(links.data == Self.weekly)
        #expect(links.web == Self.weekly)
    }

    @Test(arguments: [
        "http://news.example/a1", "HTTPS://news.example/a1", "ftp://news.example/a1", "javascript:alert(1)",
        "news.example/a1", "", "https://", "https:///a1", "https:news.example/a1",
        "https://news.example/a 1", "https://news.example/zażółć", "https://news.example/a1\n", "https://news.example/%zz",
        "https://[::1/a1",
    ])
    func aTopPickURLThatIsNotHTTPSOpensTheWeeklyPage(url: String) throws {
        #expect(!NotificationEncoder.isOpenableLink(url))
        let plan = try PlanFixture.plan(Self.digest(picks: 3, topPickURL: url), image: .ready(PlanFixture.renditions))
        #expect(plan.variant == .image)
        let links = try Self.links(plan)
        #expect(links.data == Self.weekly)
        #expect(links.web == Self.weekly)
    }

    @Test(arguments: [
        "https://news.example/a1", "https://news.example/2026/11/a%20b?utm_source=digest#top",
        "https://user@news.example:8443/a1", "https://xn--bcher-kva.example/a1",
    ])
    func anHTTPSTopPickURLIsOpenedAsItIs(url: String) throws {
        #expect(NotificationEncoder.isOpenableLink(url))
        let plan = try PlanFixture.plan(Self.digest(picks: 1, topPickURL: url), image: .ready(PlanFixture.renditions))
        let links = try Self.links(plan)
        #expect(links.data == url)
        #expect(links.web == url)
    }

    /// The link is part of the budget: an Image plan that falls back to Default opens the weekly page.
    @Test func anImagePlanThatFallsBackToDefaultOpensTheWeeklyPage() throws {
        let long = "https://news.example/" + String(repeating: "a", count: 3_900)
        let plan = try PlanFixture.plan(Self.digest(picks: 1, topPickURL: long), image: .ready(PlanFixture.renditions))
        #expect(plan.variant == .defaultText)
        #expect(plan.rules.contains("budget.fallback:Default"))
        let links = try Self.links(plan)
        #expect(links.data == Self.weekly)
        #expect(links.web == Self.weekly)
    }
}
