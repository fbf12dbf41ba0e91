import DigestCore
import DigestSQLite
import DigestTesting
import Foundation
import Testing

/// `--actions` and `--reply-key-file` on `digest run`, through the binary: a button that changes the
/// reader's preferences without reply keys is a usage error naming the flag.
@Suite("Action options")
struct ActionsOptionsTests {
    @Test(arguments: ["open,fewer", "pause", "later,off"])
    func aPreferenceButtonNeedsAReplyKeyFile(actions: String) async throws {
        let run = try await DigestBinary.run(["run", "--db", "/nonexistent/digest.sqlite", "--week", "2026-W46", "--actions", actions])
        #expect(run.status == 64 && run.stderr.contains("needs --reply-key-file"), "\(run.stderr)")
    }

    @Test func unknownOrRepeatedActionsAndBadFlagsAreUsageErrors() async throws {
        for arguments in [
            ["--actions", "open,share"], ["--actions", "open,open"], ["--ios-interruption-level", "critical"],
            ["--reply-key-file", "/nonexistent/keys"],
        ] {
            let run = try await DigestBinary.run(["run", "--db", "/nonexistent/digest.sqlite", "--week", "2026-W46"] + arguments)
            #expect(run.status == 64, "\(arguments): \(run.stderr)")
        }
        let dir = try TemporaryDirectory()
        let short = dir.path("short-keys")
        try "too short\n".write(toFile: short, atomically: true, encoding: .utf8)
        let run = try await DigestBinary.run(["run", "--db", "/nonexistent/digest.sqlite", "--week", "2026-W46", "--reply-key-file", short])
        #expect(run.status == 64 && run.stderr.contains("at least 16"), "\(run.stderr)")
    }

    /// A run with `--reply-key-file` (and a rotated file's second secret): every outbox row's message
    /// carries the reply key of its own `message_id` and the report's `fewer_topic`, the default buttons
    /// are `open,fewer,pause`, and `--ios-interruption-level` reaches the iOS payloads.
    @Test func aRunWithAReplyKeyFileSignsEveryMessage() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        let keys = dir.path("reply-keys")
        try "# rotated in November\n  the-new-secret-of-at-least-16-bytes  \n\nthe-old-secret-still-verifying\n".write(
            toFile: keys, atomically: true, encoding: .utf8)
        let end = WeeklyRunEndToEndTests()
        #expect(try await end.importFixtures(into: db).status == 0)
        let run = try await DigestBinary.run([
            "run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z", "--reply-key-file", keys,
            "--ios-interruption-level", "passive",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let verifier = try ReplyKeys(secrets: ["the-old-secret-still-verifying", "the-new-secret-of-at-least-16-bytes"])
        let signer = try ReplyKeys(secrets: ["the-new-secret-of-at-least-16-bytes"])
        let rows = try SQLiteConnection(path: db).statement("SELECT message_id, platform, report, message FROM digest_outbox")
        var count = 0
        while try rows.step() {
            count += 1
            let id = rows.string(0), platform = rows.string(1), report = rows.string(2), message = rows.string(3)
            let key = signer.sign(messageID: id)
            #expect(message.contains(#""message_id":"\#(id)","reply_key":"\#(key)""#), "\(message)")
            #expect(verifier.verifies(key, messageID: id))
            let topic = try #require(report.firstMatch(of: /"fewer_topic":"([^"]+)"/)?.1, "\(report)")
            #expect(message.contains(#""fewer_topic":"\#(topic)""#))
            if platform == "android" {
                #expect(message.contains(#"\"id\":\"fewer\""#) && message.contains(#"\"id\":\"pause\""#) && message.contains(#""picks":""#))
            }
            if platform == "ios" { #expect(message.contains(#""interruption-level":"passive""#)) }
            if platform == "web" { #expect(message.contains(#""actions":[{"action":"fewer","#)) }
        }
        #expect(count == 5)
    }
}
