import DigestCore
import DigestEvents
import DigestImport
import DigestStore
import DigestTesting
import Foundation
import Testing

/// `digest report`'s button figures on a simulated week, on both stores: messages written through the
/// ledger, presses posted to the collector with their reply keys, the report as the binary prints it.
@Suite struct ReportActionsTests {
    static let appKey = "app-key-0123456789abcdef"
    static let secret = "reply-secret-0123456789abcdef"

    /// The Wilson score interval at 95%, written out again here so the report's is checked against it.
    static func wilson(_ x: Int, _ n: Int) -> (low: Double, high: Double) {
        let z = 1.959963984540054, n = Double(n), p = Double(x) / n
        let center = (p + z * z / (2 * n)) / (1 + z * z / n)
        let half = z * (p * (1 - p) / n + z * z / (4 * n * n)).squareRoot() / (1 + z * z / n)
        return (max(0, center - half), min(1, center + half))
    }

    /// Newcombe's hybrid score interval of x1/n1 − x2/n2 from the two Wilson intervals.
    static func newcombe(_ x1: Int, _ n1: Int, _ x2: Int, _ n2: Int) -> (low: Double, high: Double) {
        let (l1, u1) = wilson(x1, n1), (l2, u2) = wilson(x2, n2)
        let p1 = Double(x1) / Double(n1), p2 = Double(x2) / Double(n2)
        return (p1 - p2 - ((p1 - l1) * (p1 - l1) + (u2 - p2) * (u2 - p2)).squareRoot(),
                p1 - p2 + ((u1 - p1) * (u1 - p1) + (p2 - l2) * (p2 - l2)).squareRoot())
    }

    static func close(_ value: Any?, _ expected: Double) -> Bool {
        guard let value = value as? Double else { return false }
        return abs(value - expected) <= 1e-12 * max(1, abs(expected))
    }

    @Test func theIntervalWrittenOutAgreesWithThePublishedOne() {
        // 5 of 100: 2.15% to 11.18% (Newcombe 1998, Table I's method).
        let (low, high) = Self.wilson(5, 100)
        #expect(abs(low - 0.021544) < 1e-5 && abs(high - 0.111750) < 1e-5)
    }

    /// 100 habit and 100 control readers with an Android message of 2026-W47 (due at the fixtures'
    /// `createdAt`), the first ten habit readers an iOS one too. Presses: habit Android 5 `fewer`,
    /// 6 `pause`, 2 `off`; habit iOS 1 `pause` (h000, whose Android `fewer` changed nothing: no topic);
    /// control Android 2 `pause`, 1 `off`. So 9 habit readers and 3 control readers stopped.
    @Test(arguments: Backend.allCases) func pressesPerThousandAndTheReadersWhoStopped(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let habit = (0..<100).map { String(format: "h%03d", $0) }, control = (0..<100).map { String(format: "c%03d", $0) }
        let readers = (habit + control).map {
            Reader(id: $0, locale: "en", timeZone: "Europe/Warsaw", optedOut: false, devices: [Device(token: "tok-\($0)", platform: .android)])
        }
        _ = try await store.withImporter { try await $0.sink.write(.users(readers)) }
        let android = Dictionary(uniqueKeysWithValues: (habit + control).map { ($0, FixtureMessage(user: $0)) })
        let ios = habit.prefix(10).map { FixtureMessage(user: $0, platform: .ios) }
        // One unsent control message: its reader is not among those sent to.
        let unsent = FixtureMessage(user: "c100", sent: false)
        try await store.write(Array(android.values) + ios + [unsent])
        try store.sql("UPDATE digest_outbox SET timing = CASE WHEN user_id LIKE 'h%' THEN 'habit' ELSE 'control' END")

        func press(_ message: FixtureMessage, _ action: String) throws -> String {
            let key = try ReplyKeys(secrets: [Self.secret]).sign(messageID: message.messageID)
            return #"{"message_id":"\#(message.messageID)","type":"action","action":"\#(action)","reply_key":"\#(key)","at":"\#(Timestamp.format(StoreHarness.createdAt + 60))"}"#
        }
        var presses: [String] = []
        presses += try habit[0..<5].map { try press(android[$0]!, "fewer") }
        presses += try habit[10..<16].map { try press(android[$0]!, "pause") }
        presses += try habit[20..<22].map { try press(android[$0]!, "off") }
        presses.append(try press(ios[0], "pause"))
        presses += try control[0..<2].map { try press(android[$0]!, "pause") }
        presses.append(try press(android[control[2]]!, "off"))
        let others = [
            HTTP.event(android[habit[30]]!.messageID, "action", action: "later"),  // not a preference button
            HTTP.event(android[habit[31]]!.messageID, "opened"),
            #"{"message_id":"\#(android[habit[32]]!.messageID)","type":"action","action":"off","reply_key":"AAAAAAAAAAAAAAAAAAAAAA","at":"\#(Timestamp.format(StoreHarness.createdAt + 60))"}"#,
        ]
        let keys = ReplyKeyFile(try ReplyKeys(secrets: [Self.secret]))
        let batch = presses + others
        let result = try await store.withCollector(keys: AppKeys(keys: [Self.appKey]), replyKeys: keys) { port in
            let (status, body) = try await HTTP.post(port: port, key: Self.appKey, body: HTTP.body(batch))
            #expect(status == 202)
            return try HTTP.result(body)
        }
        #expect(result.accepted == presses.count + 2 && result.rejected.map(\.reason) == [.badReplyKey])

        // Changes the report leaves out: a pause recorded 8 days after the due time, a settings change.
        let late = StoreHarness.createdAt + 8 * 86_400, early = StoreHarness.createdAt + 3600
        if backend == .sqlite {
            try store.sql(
                "INSERT INTO digest_preference_changes (user_pk, at, source, message_id, before, after, action) SELECT pk, \(late), 'action', NULL, '{}', '{}', 'pause' FROM users WHERE id = 'c050'")
            try store.sql(
                "INSERT INTO digest_preference_changes (user_pk, at, source, message_id, before, after, action) SELECT pk, \(early), 'cli', NULL, '{}', '{}', NULL FROM users WHERE id = 'c051'")
        } else {
            try store.sql(
                "INSERT INTO digest_preference_changes (user_id, at, source, message_id, before, after, action) VALUES ('c050', to_timestamp(\(late)), 'action', NULL, '{}', '{}', 'pause'), ('c051', to_timestamp(\(early)), 'cli', NULL, '{}', '{}', NULL)")
        }

        let db = store.url ?? store.directory.path("store.sqlite")
        let json = try await DigestBinary.run(["report", "--db", db, "--week", "2026-W47", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let rows = try #require(object["actions"] as? [[String: Any]])
        let variant = Variant.bigText.rawValue
        let expected: [(platform: String, group: String, action: String, presses: Int, sent: Int)] = [
            ("android", "control", "fewer", 0, 100), ("android", "control", "pause", 2, 100), ("android", "control", "off", 1, 100),
            ("android", "habit", "fewer", 5, 100), ("android", "habit", "pause", 6, 100), ("android", "habit", "off", 2, 100),
            ("ios", "habit", "fewer", 0, 10), ("ios", "habit", "pause", 1, 10), ("ios", "habit", "off", 0, 10),
        ]
        #expect(rows.count == expected.count, "\(rows)")
        for (row, want) in zip(rows, expected) {
            #expect(Set(row.keys) == ["variant", "platform", "group", "action", "presses", "sent", "per_1000", "per_1000_low", "per_1000_high"])
            #expect(row["variant"] as? String == variant && row["platform"] as? String == want.platform && row["group"] as? String == want.group)
            #expect(row["action"] as? String == want.action && row["presses"] as? Int == want.presses && row["sent"] as? Int == want.sent, "\(row)")
            let interval = Self.wilson(want.presses, want.sent)
            #expect(Self.close(row["per_1000"], Double(want.presses) / Double(want.sent) * 1000), "\(row)")
            #expect(Self.close(row["per_1000_low"], interval.low * 1000) && Self.close(row["per_1000_high"], interval.high * 1000), "\(row)")
        }

        let stopped = try #require(object["stopped"] as? [String: Any])
        let groups = try #require(stopped["groups"] as? [[String: Any]])
        #expect(groups.map { $0["group"] as? String } == ["habit", "control"])
        #expect(groups.map { $0["readers"] as? Int } == [100, 100] && groups.map { $0["stopped"] as? Int } == [9, 3], "\(groups)")
        for (group, stops) in zip(groups, [9, 3]) {
            let interval = Self.wilson(stops, 100)
            #expect(Self.close(group["rate"], Double(stops) / 100))
            #expect(Self.close(group["rate_low"], interval.low) && Self.close(group["rate_high"], interval.high), "\(group)")
        }
        let difference = Self.newcombe(9, 100, 3, 100)
        #expect(Self.close(stopped["difference"], 0.09 - 0.03))
        #expect(Self.close(stopped["difference_low"], difference.low) && Self.close(stopped["difference_high"], difference.high), "\(stopped)")

        let text = try await DigestBinary.run(["report", "--db", db, "--week", "2026-W47"])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("button presses per 1,000 sent:"), "\(text.stdout)")
        #expect(text.stdout.contains("  \(variant)  android   habit    pause         6   100       60.0  "), "\(text.stdout)")
        #expect(text.stdout.contains("  habit:   9 of 100 stopped, 9.0% ("), "\(text.stdout)")
        #expect(text.stdout.contains("  habit − control: +6.0 points (95% CI "), "\(text.stdout)")
    }

    /// A split week without timing groups: a row group per arm, `arm` and no `group`, no `stopped`.
    @Test(arguments: Backend.allCases) func aSplitWeekCountsPerArm(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let users = (0..<8).map { "s\($0)" }
        let readers = users.map {
            Reader(id: $0, locale: "en", timeZone: "UTC", optedOut: false, devices: [Device(token: "tok-\($0)", platform: .android)])
        }
        _ = try await store.withImporter { try await $0.sink.write(.users(readers)) }
        let messages = users.enumerated().map { index, user in
            FixtureMessage(user: user, variant: index < 5 ? .image : .bigText, arm: index < 5 ? "image" : "text")
        }
        try await store.write(messages)
        let keys = try ReplyKeys(secrets: [Self.secret])
        func press(_ message: FixtureMessage, _ action: String) throws -> String {
            #"{"message_id":"\#(message.messageID)","type":"action","action":"\#(action)","reply_key":"\#(try keys.sign(messageID: message.messageID))","at":"\#(Timestamp.format(StoreHarness.createdAt + 60))"}"#
        }
        let batch = [try press(messages[0], "off"), try press(messages[1], "off"), try press(messages[6], "fewer")]
        let result = try await store.withCollector(keys: AppKeys(keys: [Self.appKey]), replyKeys: ReplyKeyFile(keys)) { port in
            let (_, body) = try await HTTP.post(port: port, key: Self.appKey, body: HTTP.body(batch))
            return try HTTP.result(body)
        }
        #expect(result.accepted == 3)
        let db = store.url ?? store.directory.path("store.sqlite")
        let json = try await DigestBinary.run(["report", "--db", db, "--week", "2026-W47", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["stopped"] == nil)
        let rows = try #require(object["actions"] as? [[String: Any]])
        let figures = rows.map { "\($0["variant"] as? String ?? "?") \($0["arm"] as? String ?? "?") \($0["action"] as? String ?? "?") \($0["presses"] as? Int ?? -1)/\($0["sent"] as? Int ?? -1)" }
        #expect(figures == [
            "BigText text fewer 1/3", "BigText text pause 0/3", "BigText text off 0/3",
            "Image image fewer 0/5", "Image image pause 0/5", "Image image off 2/5",
        ])
        #expect(rows.allSatisfy { $0["group"] == nil })
        let off = Self.wilson(2, 5)
        #expect(Self.close(rows[5]["per_1000"], 400) && Self.close(rows[5]["per_1000_low"], off.low * 1000) && Self.close(rows[5]["per_1000_high"], off.high * 1000))
    }
}
