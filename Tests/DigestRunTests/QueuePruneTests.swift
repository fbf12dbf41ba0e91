import DigestCore
import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `digest queue prune` and `digest run --retain` through the real binary, at fixed instants (`--as-of`).
@Suite struct QueuePruneTests {
    /// A database with the fixtures' week 2026-W46 run: five ready messages and their readers' picks.
    func databaseWithAWeek(_ dir: TemporaryDirectory) async throws -> String {
        let db = dir.path("digest.sqlite")
        let imported = try await DigestBinary.run(["import", "--db", db] + ["users", "articles", "reads"].map {
            WeeklyRunEndToEndTests.fixtures.appendingPathComponent("\($0).jsonl").path
        })
        #expect(imported.status == 0, "\(imported.stderr)")
        let run = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"])
        #expect(run.status == 0, "\(run.stderr)")
        return db
    }

    func sql(_ db: String, _ statement: String) throws -> String {
        let connection = try SQLiteConnection(path: db)
        let prepared = try connection.statement(statement)
        var lines: [String] = []
        while try prepared.step() { lines.append((0..<prepared.columnCount).map { prepared.string($0) }.joined(separator: "|")) }
        return lines.joined(separator: "\n")
    }

    @Test(arguments: [(["queue", "prune"], ["--older-than", "14d"]), (["run"], ["--week", "2026-W46", "--retain", "3w"])])
    func aRetentionBelowTheMinimumIsRefusedInOneLine(command: [String], options: [String]) async throws {
        let dir = try TemporaryDirectory()
        let db = try await databaseWithAWeek(dir)
        let refused = try await DigestBinary.run(command + ["--db", db] + options)
        #expect(refused.status != 0)
        let lines = refused.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(refused.stderr)")
        let given = options.suffix(2).joined(separator: " ")
        #expect(lines.first?.contains("\(given) is shorter than the minimum retention of 28d") == true, "\(refused.stderr)")
        #expect(try sql(db, "SELECT count(*) FROM digest_outbox") == "5", "nothing happened")
    }

    /// The summary line, `--dry-run` and `--json`: two sent messages and a dead one settled long
    /// enough ago go, with the picks of week 2026-W46; the ready ones stay.
    @Test func pruneSaysWhatWentOrWouldGo() async throws {
        let dir = try TemporaryDirectory()
        let db = try await databaseWithAWeek(dir)
        let settled = Timestamp.parse("2026-11-17T08:00:00Z")!
        _ = try sql(db, "UPDATE digest_outbox SET state = 'sent', sent_at = \(settled), settled_at = \(settled) WHERE id IN (SELECT id FROM digest_outbox ORDER BY id LIMIT 2)")
        _ = try sql(db, "UPDATE digest_outbox SET state = 'dead', settled_at = \(settled) WHERE id = (SELECT max(id) FROM digest_outbox)")
        let picks = Int(try sql(db, "SELECT count(*) FROM digest_picks"))!
        #expect(picks > 0)
        let arguments = ["queue", "prune", "--db", db, "--older-than", "30d", "--as-of", "2027-01-20T00:00:00Z"]

        let dry = try await DigestBinary.run(arguments + ["--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(
            dry.stdout
                == "would prune 3 messages (sent 2, dead 1, expired 0) settled before 2026-12-21T00:00:00Z; \(picks) picks rows of weeks before 2026-W49; attachments not swept (no --attachments)\n")
        let json = try await DigestBinary.run(arguments + ["--dry-run", "--json"])
        let report = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(report?["dryRun"] as? Bool == true)
        #expect(report?["messages"] as? [String: Int] == ["sent": 2, "dead": 1])
        #expect(report?["picks"] as? Int == picks)
        #expect(report?["cutoff"] as? String == "2026-12-21T00:00:00Z" && report?["olderThan"] as? String == "30d")
        #expect(try sql(db, "SELECT count(*) FROM digest_outbox") == "5", "a dry run deletes nothing")

        let pruned = try await DigestBinary.run(arguments)
        #expect(pruned.status == 0, "\(pruned.stderr)")
        #expect(pruned.stdout.hasPrefix("pruned 3 messages (sent 2, dead 1, expired 0)"), "\(pruned.stdout)")
        #expect(try sql(db, "SELECT state, count(*) FROM digest_outbox GROUP BY state") == "ready|2")
        #expect(try sql(db, "SELECT count(*) FROM digest_picks") == "0")
        // Less than 30 days after they were settled, nothing goes.
        let early = try await DigestBinary.run(["queue", "prune", "--db", db, "--older-than", "30d", "--as-of", "2026-12-01T00:00:00Z"])
        #expect(early.stdout.hasPrefix("pruned 0 messages"), "\(early.stdout)")
    }

    /// With `--attachments`, an old rendition no message links to goes and the line counts it.
    @Test func pruneSweepsTheAttachmentsDirectory() async throws {
        let dir = try TemporaryDirectory()
        let db = try await databaseWithAWeek(dir)
        let attachments = dir.path("attachments")
        try FileManager.default.createDirectory(atPath: attachments, withIntermediateDirectories: true)
        let file = attachments + "/" + String(repeating: "a", count: 32) + ".jpg"
        try Data(repeating: 1, count: 1500).write(to: URL(fileURLWithPath: file))
        let modified = Int(Timestamp.parse("2026-11-01T00:00:00Z")!)
        var times = [timeval(tv_sec: modified, tv_usec: 0), timeval(tv_sec: modified, tv_usec: 0)]
        #expect(utimes(file, &times) == 0)
        let pruned = try await DigestBinary.run(
            ["queue", "prune", "--db", db, "--attachments", attachments, "--as-of", "2026-12-20T00:00:00Z"])
        #expect(pruned.status == 0, "\(pruned.stderr)")
        #expect(pruned.stdout.contains("; 1 attachment file (1.5 kB freed), 0 URL memo entries; kept 0 linked, 0 recent"), "\(pruned.stdout)")
        #expect(!FileManager.default.fileExists(atPath: file))
        let missing = try await DigestBinary.run(["queue", "prune", "--db", db, "--attachments", dir.path("nowhere")])
        #expect(missing.status != 0 && missing.stderr.contains("no such directory"), "\(missing.stderr)")
    }

    /// `digest run --retain` prunes after the run: a rerun of the week enqueues nothing and prunes its
    /// messages, sent long before.
    @Test func aRunWithRetainPrunesAtTheEnd() async throws {
        let dir = try TemporaryDirectory()
        let db = try await databaseWithAWeek(dir)
        let sent = Timestamp.parse("2026-11-16T13:00:00Z")!
        _ = try sql(db, "UPDATE digest_outbox SET state = 'sent', sent_at = \(sent), settled_at = \(sent)")
        let run = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2027-01-20T00:00:00Z", "--retain", "30d"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("pruned 5 messages (sent 5, dead 0, expired 0) settled before 2026-12-21T00:00:00Z"), "\(run.stdout)")
        #expect(try sql(db, "SELECT count(*) FROM digest_outbox") == "0")
        #expect(try sql(db, "SELECT state FROM digest_runs WHERE week = '2026-W46'") == "done", "the week's bookkeeping stays")
        let again = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2027-01-21T00:00:00Z"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try sql(db, "SELECT count(*) FROM digest_outbox") == "0", "a rerun of a pruned week enqueues nothing")
    }
}
