import DigestCore
import DigestReport
import DigestStore
import DigestTesting
import Foundation
import Testing

/// `digest report`'s figures: the statistics against known values, and a small split week on both
/// stores against figures computed by hand.
@Suite struct ReportTests {
    /// Wilson 95% intervals: 81 of 263 is Newcombe's (1998) worked example, (0.2553, 0.3662); the rest
    /// computed independently with Python's math module from the closed form.
    @Test(arguments: [
        (81, 263, 0.2552885199, 0.3662095770),
        (0, 10, 0.0, 0.2775327999),
        (10, 10, 0.7224672001, 1.0),
        (3, 10, 0.1077912674, 0.6032218525),
        (12, 40, 0.1807484523, 0.4543001882),
    ])
    func wilsonIntervals(successes: Int, trials: Int, low: Double, high: Double) throws {
        let interval = try #require(OpenRateStatistics.wilson(successes: successes, trials: trials))
        #expect(abs(interval.low - low) < 1e-9 && abs(interval.high - high) < 1e-9, "\(interval)")
    }

    /// Pooled two-proportion z-tests: 45/150 against 30/150 has z exactly 2 (pooled 0.25, standard
    /// error 0.05), two-sided p = 2(1 − Φ(2)) = 0.0455002639; the others computed with Python.
    @Test(arguments: [
        (45, 150, 30, 150, 2.0, 0.0455002639),
        (12, 40, 8, 40, 1.0327955590, 0.3016995825),
        (30, 100, 18, 100, 1.9867985356, 0.0469447270),
        (18, 100, 30, 100, -1.9867985356, 0.0469447270),
    ])
    func twoProportionTests(x1: Int, n1: Int, x2: Int, n2: Int, z: Double, p: Double) throws {
        let test = try #require(OpenRateStatistics.twoProportionTest(x1: x1, n1: n1, x2: x2, n2: n2))
        #expect(abs(test.z - z) < 1e-9 && abs(test.pValue - p) < 1e-9, "\(test)")
    }

    /// Newcombe's (1998) hybrid score intervals of a difference: his Table II examples (to the four
    /// places he gives: 56/70 − 48/80 is (0.0524, 0.3339), …), here to 1e-9 from the closed form
    /// computed with Python.
    @Test(arguments: [
        (56, 70, 48, 80, 0.0524314724, 0.3338726540),
        (9, 10, 3, 10, 0.1705227239, 0.8090179735),
        (5, 56, 0, 29, -0.0381371479, 0.1925600139),
        (0, 10, 0, 20, -0.1611251581, 0.2775327999),
        (0, 10, 0, 10, -0.2775327999, 0.2775327999),
        (10, 10, 0, 20, 0.6790860371, 1.0),
        (10, 10, 0, 10, 0.6075093504, 1.0),
    ])
    func differenceIntervals(x1: Int, n1: Int, x2: Int, n2: Int, low: Double, high: Double) throws {
        let interval = try #require(OpenRateStatistics.newcombe(x1: x1, n1: n1, x2: x2, n2: n2))
        #expect(abs(interval.low - low) < 1e-9 && abs(interval.high - high) < 1e-9, "\(interval)")
    }

    @Test func degenerateCases() {
        #expect(OpenRateStatistics.wilson(successes: 0, trials: 0) == nil)
        #expect(OpenRateStatistics.newcombe(x1: 1, n1: 2, x2: 0, n2: 0) == nil)
        #expect(OpenRateStatistics.twoProportionTest(x1: 0, n1: 0, x2: 1, n2: 2) == nil)
        #expect(OpenRateStatistics.twoProportionTest(x1: 0, n1: 5, x2: 0, n2: 7).map { [$0.z, $0.pValue] } == [0, 1])
    }

    /// A split week: the image arm's Image messages on Android (en) and iOS (pl), the text arm's
    /// BigText on Android and the web (en); one iOS message not sent (yet it reported receipt), and
    /// a message of the week before, which this week's report leaves out.
    static let fixture: [FixtureMessage] = [
        .init(user: "u1", variant: .image, arm: "image"), .init(user: "u2", variant: .image, arm: "image"),
        .init(user: "u3", variant: .image, arm: "image"), .init(user: "u4", variant: .image, arm: "image"),
        .init(user: "u5", platform: .ios, variant: .image, locale: "pl", arm: "image"),
        .init(user: "u6", platform: .ios, variant: .image, locale: "pl", arm: "image"),
        .init(user: "u7", platform: .ios, variant: .image, locale: "pl", arm: "image", sent: false),
        .init(user: "u8", arm: "text"), .init(user: "u9", arm: "text"), .init(user: "u10", arm: "text"),
        .init(user: "u11", platform: .web, arm: "text"),
        .init(user: "u1", variant: .image, arm: "image", week: "2026-W46"),
    ]

    static func events() -> [AppEvent] {
        let at = StoreHarness.createdAt + 120
        func id(_ user: String, _ platform: Platform = .android, week: String = "2026-W47") -> String {
            FixtureMessage(user: user, platform: platform, week: week).messageID
        }
        return [
            ("u1", "received"), ("u2", "received"), ("u3", "received"), ("u1", "displayed"), ("u2", "displayed"),
            ("u1", "opened"), ("u2", "opened"), ("u3", "dismissed"), ("u8", "received"), ("u9", "received"), ("u8", "opened"),
        ].map { AppEvent(messageID: id($0.0), type: AppEventType(rawValue: $0.1)!, at: at) } + [
            AppEvent(messageID: id("u1"), type: .action, action: "later", at: at),
            AppEvent(messageID: id("u2"), type: .action, action: "open", at: at),
            AppEvent(messageID: id("u5", .ios), type: .received, at: at),
            AppEvent(messageID: id("u5", .ios), type: .opened, at: at),
            AppEvent(messageID: id("u7", .ios), type: .received, at: at),
            AppEvent(messageID: id("u1", week: "2026-W46"), type: .opened, at: at),
        ]
    }

    @Test(arguments: Backend.allCases) func aSplitWeekAgainstHandComputedFigures(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        try await store.write(Self.fixture)
        let result = try await Self.record(store.database, Self.events())
        #expect(result == EventBatchResult(accepted: 17))
        let report = DeliveryReport(week: "2026-W47", counts: try await store.database.eventCounts(week: "2026-W47"))

        func row(_ v: String, _ p: String, _ l: String, _ figures: [Int]) -> [String] {
            [v, p, l] + figures.map(String.init)
        }
        #expect(report.rows.map { [$0.variant, $0.platform, $0.locale ?? "-"] + [$0.sent, $0.received, $0.displayed, $0.opened, $0.dismissed, $0.actions].map(String.init) } == [
            // sent, received, displayed, opened, dismissed, actions
            row("BigText", "android", "en", [3, 2, 0, 1, 0, 0]),
            row("BigText", "web", "en", [1, 0, 0, 0, 0, 0]),
            row("Image", "android", "en", [4, 3, 2, 2, 1, 2]),
            row("Image", "ios", "pl", [2, 2, 0, 1, 0, 0]),
        ])
        // Open rates and their Wilson intervals (1/3, 0/1, 2/4, 1/2), computed with Python.
        let rates: [(Double, Double, Double)] = [
            (1.0 / 3, 0.061491944720, 0.792340399198), (0, 0, 0.793450685623),
            (0.5, 0.150038989152, 0.849961010848), (0.5, 0.094531205734, 0.905468794266),
        ]
        for (row, expected) in zip(report.rows, rates) {
            #expect(abs(row.openRate! - expected.0) < 1e-12)
            #expect(abs(row.openRateLow! - expected.1) < 1e-9 && abs(row.openRateHigh! - expected.2) < 1e-9, "\(row)")
        }
        // The arms: image 3 of 6 opened, text 1 of 4; pooled 0.4, standard error √0.1, z = 0.25/√0.1.
        let split = try #require(report.split)
        #expect(split.arms.map { [$0.arm, String($0.sent), String($0.opened)] } == [["image", "6", "3"], ["text", "4", "1"]])
        #expect(abs(split.difference! - 0.25) < 1e-12)
        #expect(abs(split.z! - 0.790569415042) < 1e-9)
        #expect(abs(split.pValue! - 0.429195300440) < 1e-9)
        #expect(abs(split.arms[0].openRateLow! - 0.187616306483) < 1e-9 && abs(split.arms[1].openRateHigh! - 0.699358157418) < 1e-9)

        #expect(report.text == """
            week 2026-W47: 10 sent, 4 opened
            variant  platform  locale  sent  received  displayed  opened  dismissed  actions  open rate (95% CI)
            BigText  android   en         3         2          0       1          0        0  33.3% (6.1–79.2%)
            BigText  web       en         1         0          0       0          0        0  0.0% (0.0–79.3%)
            Image    android   en         4         3          2       2          1        2  50.0% (15.0–85.0%)
            Image    ios       pl         2         2          0       1          0        0  50.0% (9.5–90.5%)
            split:
              image arm: 3 of 6 opened, 50.0% (18.8–81.2%)
              text arm: 1 of 4 opened, 25.0% (4.6–69.9%)
              image − text: +25.0 points, z = 0.79, two-sided p = 0.4292
            """)
        // The week before holds its own message and event.
        let before = DeliveryReport(week: "2026-W46", counts: try await store.database.eventCounts(week: "2026-W46"))
        #expect(before.rows.map { [$0.sent, $0.opened] } == [[1, 1]])

        // Retention deletes the sent messages (in batches of 4), the report of their week stays the
        // same: the prune counted what it deleted.
        let retention = try OutboxRetention(age: OutboxRetention.minimumAge, batchSize: 4)
        let pruned = try await store.database.prune(retention, now: StoreHarness.createdAt + OutboxRetention.minimumAge + 86_400)
        #expect(pruned.messages == ["sent": 11])
        #expect(try store.sql("SELECT count(*) FROM digest_outbox") == "1", "the unsent one stays")
        let after = DeliveryReport(week: "2026-W47", counts: try await store.database.eventCounts(week: "2026-W47"))
        #expect(after == report)
        #expect(DeliveryReport(week: "2026-W46", counts: try await store.database.eventCounts(week: "2026-W46")) == before)
    }

    static func record<D: DigestDatabase>(_ database: D, _ events: [AppEvent]) async throws -> EventBatchResult {
        try await database.withEventSink { sink in
            try await sink.record(events.enumerated().map { IndexedEvent(index: $0.offset, event: $0.element) }, now: StoreHarness.now)
        }
    }

    @Test func jsonNamesTheFields() throws {
        let report = DeliveryReport(week: "2026-W47", counts: [
            EventCounts(variant: "Default", platform: "web", locale: "", arm: "", sent: 4, received: 3, displayed: 3, opened: 2, dismissed: 1, actions: 0)
        ])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(report), as: UTF8.self)
        // No button groups: "actions" is an empty list, sorted first.
        #expect(json.hasPrefix(#"{"actions":[],"rows":[{"actions":0,"dismissed":1,"displayed":3,"locale":null,"open_rate":0.5,"open_rate_high":"#))
        #expect(json.hasSuffix(#""opened":2,"platform":"web","received":3,"sent":4,"variant":"Default"}],"week":"2026-W47"}"#))
        #expect(report.split == nil)
    }
}
