import DigestCore
import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A press on last week's digest changes next week's, end to end through the binaries: `digest run`
/// signs each message, `digest collect` takes the presses, the next `digest run` obeys them.
@Suite struct ButtonPressRunTests {
    static let secret = "reply-secret-0123456789abcdef"
    static let appKey = "app-key-0123456789abcdef"

    /// The first outbox row of `user` in `week`: its message id, reply key and `fewer_topic`.
    static func outbox(_ db: String, week: String, user: String) async throws -> OutboxRow? {
        let database = SQLiteDatabase.sqlite(path: db)
        let row = try await database.outboxRows(week: week, userID: user).first
        await database.close()
        return row
    }

    static func row(_ db: String, week: String, user: String) async throws -> (id: String, replyKey: String, fewerTopic: String?)? {
        guard let row = try await outbox(db, week: week, user: user), let id = row.messageID else { return nil }
        let message = try #require(try JSONSerialization.jsonObject(with: Data(row.message.utf8)) as? [String: Any])
        let data = try #require(((message["message"] as? [String: Any])?["android"] as? [String: Any])?["data"] as? [String: String])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(row.report.utf8)) as? [String: Any])
        return (id, try #require(data["reply_key"]), report["fewer_topic"] as? String)
    }

    static func picks(_ db: String, week: String, user: String) async throws -> [String]? {
        guard let row = try await outbox(db, week: week, user: user) else { return nil }
        let report = try #require(try JSONSerialization.jsonObject(with: Data(row.report.utf8)) as? [String: Any])
        return report["picks"] as? [String]
    }

    @Test func aPressOnLastWeeksDigestChangesThisWeeks() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        let database = SQLiteDatabase.sqlite(path: db)
        _ = try await database.migrate()
        try await PreferenceRunTests.importAll(into: database, in: dir)
        await database.close()
        let keys = dir.path("reply-keys"), appKeys = dir.path("app-keys")
        try "\(Self.secret)\n".write(toFile: keys, atomically: true, encoding: .utf8)
        try "\(Self.appKey)\n".write(toFile: appKeys, atomically: true, encoding: .utf8)

        let first = try await DigestBinary.run([
            "run", "--db", db, "--week", "2026-W46", "--send-at", "now", "--allow-empty-week", "--reply-key-file", keys,
        ])
        #expect(first.status == 0, "\(first.stderr)")
        let plain = try #require(try await Self.row(db, week: "2026-W46", user: "u-plain"))
        let topic = try #require(plain.fewerTopic)
        let muted = try #require(try await Self.row(db, week: "2026-W46", user: "u-mute"))
        #expect(try ReplyKeys(secrets: [Self.secret]).verifies(plain.replyKey, messageID: plain.id))

        let collector = try DigestBinary.start(
            ["collect", "--db", db, "--key-file", appKeys, "--reply-key-file", keys, "--port", "0"], name: "collect", in: dir.url)
        defer { collector.kill() }
        let deadline = ContinuousClock.now + .seconds(60)
        while !collector.stdout.contains("/v1/events") && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let line = try #require(collector.stdout.split(separator: "\n").first { $0.hasPrefix("collecting events on ") }, "\(collector.stderr)")
        let port = try #require(Int(line.split(separator: ":")[2].split(separator: "/")[0]))
        // Just after the messages were written (the collector's clock is the system's).
        let at = Timestamp.format(Int64(Date().timeIntervalSince1970) + 2)
        let body = #"{"events":[{"message_id":"\#(plain.id)","type":"action","action":"fewer","reply_key":"\#(plain.replyKey)","at":"\#(at)"},{"message_id":"\#(muted.id)","type":"action","action":"pause","reply_key":"\#(muted.replyKey)","at":"\#(at)"},{"message_id":"\#(muted.id)","type":"action","action":"off","reply_key":"\#(plain.replyKey)","at":"\#(at)"}]}"#
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/events")!)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer \(Self.appKey)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 202)
        let answer = String(decoding: data, as: UTF8.self)
        // The third press carries another message's key: refused, and u-mute is not turned off.
        #expect(answer.contains(#""accepted":2"#) && answer.contains("bad_reply_key"), "\(answer)")
        kill(collector.process.processIdentifier, SIGTERM)
        _ = try await collector.finish()

        let second = try await DigestBinary.run([
            "run", "--db", db, "--week", "2026-W47", "--send-at", "now", "--allow-empty-week", "--reply-key-file", keys,
        ])
        #expect(second.status == 0, "\(second.stderr)")
        // Fewer: the pressed topic at most once, never first.
        let picks = try #require(try await Self.picks(db, week: "2026-W47", user: "u-plain"))
        let withTopic = picks.filter { PreferenceRunTests.topics(of: $0).contains(topic) }
        #expect(withTopic.count <= 1 && !PreferenceRunTests.topics(of: picks[0]).contains(topic), "\(topic): \(picks)")
        // Pause: the next digest (due now) falls within the 28 days: none, skipped as paused.
        #expect(try await Self.picks(db, week: "2026-W47", user: "u-mute") == nil)
        // Only the pressed u-mute: u-pause's own pause (through 2026-11-25) ended before this run's now.
        #expect(second.stdout.range(of: #"paused 1\b"#, options: .regularExpression) != nil, "\(second.stdout)")
        let shown = try await DigestBinary.run(["readers", "show", "--db", db, "u-mute"])
        #expect(shown.stdout.contains("  digest: on\n") && shown.stdout.contains(" action \(muted.id): "), "\(shown.stdout)")
    }
}
