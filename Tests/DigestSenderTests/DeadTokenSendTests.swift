import DigestCore
import DigestPostgres
import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Testing

@testable import DigestSender

/// Tokens through the whole loop, run → send → import again → run, on both stores: a token FCM called
/// unregistered gets nothing the next week although the users file lists it again, and a token listed
/// under three readers gets one message a week.
@Suite struct DeadTokenSendTests {
    /// Outbox rows as `week token → count`, and their states.
    func outbox(_ db: String, in dir: TemporaryDirectory) async throws -> (byWeekAndToken: [String: Int], states: [String: Int]) {
        let peek = try await DigestBinary.run(["queue", "peek", "--db", db, "--limit", "1000", "--show-tokens"])
        #expect(peek.status == 0, "\(peek.stderr)")
        var byWeekAndToken: [String: Int] = [:]
        var states: [String: Int] = [:]
        for line in peek.stdout.split(separator: "\n") {
            let row = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            let message = (row["message"] as! [String: Any])["message"] as! [String: Any]
            byWeekAndToken["\(row["week"]!) \(message["token"]!)", default: 0] += 1
            states[row["state"] as! String, default: 0] += 1
        }
        return (byWeekAndToken, states)
    }

    @Test(arguments: TestStore.allCases) func aDeadTokenStaysDeadAfterAReimportAndASharedTokenGetsOneMessage(backend: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let db = try await backend.make(in: dir, name: "tokens")
        let users = try dir.write("users.jsonl", lines: [
            #"{"id":"gone","locale":"en","timeZone":"UTC","devices":[{"token":"tok-dead","platform":"android"}]}"#,
            #"{"id":"r-a","locale":"en","timeZone":"UTC","devices":[{"token":"tok-shared","platform":"ios"}]}"#,
            #"{"id":"r-b","locale":"en","timeZone":"UTC","devices":[{"token":"tok-shared","platform":"ios"}]}"#,
            #"{"id":"r-c","locale":"en","timeZone":"UTC","devices":[{"token":"tok-shared","platform":"ios"}]}"#,
            #"{"id":"keeper","locale":"en","timeZone":"UTC","devices":[{"token":"tok-keep","platform":"web"}]}"#,
        ])
        let articles = try dir.write("articles.jsonl", lines: (1...6).map { n in
            #"{"id":"a\#(n)","title":"Story \#(n)","url":"https://news.example/a\#(n)","topics":["swift"],"publishedAt":"2026-11-0\#(n)T08:00:00Z","readingMinutes":4}"#
        })
        let reads = try dir.write("reads.jsonl", lines: ["gone", "r-a", "r-b", "r-c", "keeper"].flatMap { user in
            [#"{"userId":"\#(user)","articleId":"a1","readAt":"2026-11-04T12:00:00Z","seconds":200}"#,
             #"{"userId":"\#(user)","articleId":"a2","readAt":"2026-11-11T12:00:00Z","seconds":200}"#]
        })
        #expect(try await DigestBinary.run(["import", "--db", db, users, articles, reads]).status == 0)

        let first = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W45", "--as-of", "2026-11-10T00:00:00Z", "--send-at", "now"])
        #expect(first.status == 0, "\(first.stderr)")
        // The shared token is the last line's (r-c): one message, not three.
        await #expect(try outbox(db, in: dir).byWeekAndToken == ["2026-W45 tok-dead": 1, "2026-W45 tok-shared": 1, "2026-W45 tok-keep": 1])

        var faults = FakeFCMServer.Faults()
        faults.unregisteredTokens = ["tok-dead"]
        let server = try await FakeFCMServer.start(faults: faults)
        // The sender from an instant an hour after the run on: the messages are due and within their TTL.
        let instant = Timestamp.parse("2026-11-10T01:00:00Z")!
        let sent: SendSummary
        switch backend {
        case .sqlite:
            sent = try await SenderHarness.withSender(db: db, server: server, dir: dir) { $0.clock = SenderHarness.clock(from: instant) } _: { sender, _ in
                try await sender.send()
            }
        case .postgres:
            sent = try await SenderHarness.withSender(database: try PostgresDatabase.postgres(url: db).runningUntilClosed(), server: server, dir: dir) {
                $0.clock = SenderHarness.clock(from: instant)
            } _: { sender, _ in try await sender.send() }
        }
        #expect(sent.sent == 2 && server.stats.delivered == 2, "\(sent.lines())")
        try await server.shutdown()

        // The app exports the same users file again: the dead token comes back in it.
        #expect(try await DigestBinary.run(["import", "--db", db, users]).status == 0)
        let second = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-17T00:00:00Z", "--send-at", "now"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("devices skipped: dead_token 1"), "\(second.stdout)")
        #expect(second.stdout.contains("dead_tokens 1"), "\(second.stdout)")
        let rows = try await outbox(db, in: dir)
        #expect(rows.byWeekAndToken["2026-W46 tok-dead"] == nil)
        #expect(rows.byWeekAndToken["2026-W46 tok-shared"] == 1 && rows.byWeekAndToken["2026-W46 tok-keep"] == 1, "\(rows.byWeekAndToken)")
        #expect(rows.states["dead"] == 1 && rows.states["sent"] == 2, "\(rows.states)")

        // By hand: the token is alive again.
        let revive = try await DigestBinary.run(["devices", "revive", "--db", db, "tok-dead"])
        #expect(revive.status == 0 && revive.stdout.contains("alive again"), "\(revive.stdout)\(revive.stderr)")
        let again = try await DigestBinary.run(["devices", "revive", "--db", db, "tok-dead"])
        #expect(again.stdout.contains("was not dead"), "\(again.stdout)")
    }
}
