import DigestCore
import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Testing

/// The weekly run on PostgreSQL through the real binary: the same messages as on SQLite, many
/// workers sharing a week, a worker killed mid-chunk, the server restarted mid-run, and one clear
/// line for each connection mistake.
@Suite(.serialized) struct PostgresRunTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// The demo's sample data (1,500 users), written once for the suite (a task, so that waiting for
    /// it holds no thread of the concurrency pool).
    static let demoData = Task { () async throws -> (TemporaryDirectory, URL) in
        let dir = try TemporaryDirectory()
        let demo = try await DigestBinary.run(["demo", "--out", dir.path("demo"), "--users", "1500"])
        guard demo.status == 0 else { throw PostgresClusterError("demo failed: \(demo.stderr)") }
        return (dir, dir.url.appendingPathComponent("demo/data"))
    }

    /// A migrated database holding `files`, on `cluster`.
    func database(with files: [String], on cluster: PostgresCluster) async throws -> String {
        let url = try cluster.makeDatabase("run")
        let migrated = try await DigestBinary.run(["migrate", "--db", url])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        let imported = try await DigestBinary.run(["import", "--db", url] + files)
        #expect(imported.status == 0, "\(imported.stderr)")
        return url
    }

    func demoFiles() async throws -> [String] {
        let data = try await Self.demoData.value.1
        return ["users", "articles", "reads"].map { data.appendingPathComponent("\($0).jsonl").path }
    }

    /// Messages the week must end with: those of the same data run on SQLite (one per device of a
    /// reader who is not opted out or dormant), computed once for the suite.
    static let referenceMessages = Task { () async throws -> Int in
        let (dir, data) = try await demoData.value
        let db = dir.path("reference.sqlite")
        let files = ["users", "articles", "reads"].map { data.appendingPathComponent("\($0).jsonl").path }
        guard try await DigestBinary.run(["import", "--db", db] + files).status == 0,
            try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"]).status == 0
        else { throw PostgresClusterError("the SQLite reference run failed") }
        let peek = try await DigestBinary.run(["queue", "stats", "--db", db, "--json"])
        let stats = try JSONSerialization.jsonObject(with: Data(peek.stdout.utf8)) as! [String: Any]
        return stats["total"] as! Int
    }

    func eligibleDevices() async throws -> Int { try await Self.referenceMessages.value }

    /// Messages by dedupe key, as `digest queue peek` prints them (JSON parsed, so jsonb's spacing
    /// and key order do not matter).
    /// The outbox as `queue peek` shows it, by dedupe key, without row ids or the ids' run positions
    /// (chunks of PostgreSQL and batches of SQLite place the same messages differently).
    func outbox(_ db: String) async throws -> [String: NSDictionary] {
        let peek = try await DigestBinary.run(["queue", "peek", "--db", db, "--limit", "100000", "--show-tokens"])
        #expect(peek.status == 0, "\(peek.stderr)")
        var rows: [String: NSDictionary] = [:]
        for line in peek.stdout.split(separator: "\n") {
            var object = try JSONSerialization.jsonObject(with: Data(withoutIDPositions(String(line)).utf8)) as! [String: Any]
            object["id"] = nil
            rows[object["dedupe_key"] as! String] = object as NSDictionary
        }
        return rows
    }

    func chunks(_ cluster: PostgresCluster, _ url: String) throws -> (total: Int, done: Int, claims: Int) {
        let line = try cluster.sql(
            "SELECT count(*), count(*) FILTER (WHERE state = 'done'), sum(claims) FROM digest_run_chunks WHERE week = '2026-W46'",
            url: url)
        let fields = line.split(separator: "|").compactMap { Int($0) }
        return (fields[0], fields[1], fields[2])
    }

    @Test func theRunGivesTheSameMessagesAsOnSQLite() async throws {
        let cluster = try PostgresCluster.shared()
        let files = ["users", "articles", "reads"].map { Self.fixtures.appendingPathComponent("\($0).jsonl").path }
        let url = try await database(with: files, on: cluster)
        let dir = try TemporaryDirectory()
        let sqlite = dir.path("digest.sqlite")
        #expect(try await DigestBinary.run(["import", "--db", sqlite] + files).status == 0)
        for db in [sqlite, url] {
            let run = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z", "--chunk-size", "2"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("messages: 5 built, 5 enqueued"), "\(run.stdout)")
        }
        let expected = try await outbox(sqlite)
        let rows = try await outbox(url)
        #expect(rows.count == 5)
        #expect(rows == expected)
        // A rerun enqueues nothing.
        let rerun = try await DigestBinary.run(["run", "--db", url, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"])
        #expect(rerun.status == 0 && rerun.stdout.contains("0 enqueued"), "\(rerun.stdout)")
    }

    /// A store from before migration 11 (`message` still `jsonb`, a message in it): `digest migrate`
    /// makes the column `json`, the earlier row keeps its message (in jsonb's rendering), and the rows
    /// a run enqueues afterwards hold the bytes the encoder wrote and budgeted: for the same data, the
    /// same bytes as SQLite's outbox. Each store places a reader's messages in its own batches or
    /// chunks, so the 18 hex digits of each `message_id` that say where (``withoutIDPositions(_:)``)
    /// are the only bytes allowed to differ.
    @Test func afterTheMigrationTheOutboxKeepsTheEncodedBytesAsSQLiteDoes() async throws {
        let cluster = try PostgresCluster.shared()
        let files = ["users", "articles", "reads"].map { Self.fixtures.appendingPathComponent("\($0).jsonl").path }
        let url = try await database(with: files, on: cluster)
        // Back to version 10, as a store migrated by the previous release (migration 12's devices
        // column, migration 13's provider columns, migration 14's timing, migration 15's keys and migration 16's test sends undone
        // too), with a message
        // enqueued then.
        let earlier = #"{"message":{"token":"t-before","data":{"b":"2","a":"1"}}}"#
        try cluster.sql(
            """
            ALTER TABLE digest_outbox ALTER COLUMN message TYPE jsonb USING message::jsonb;
            DROP VIEW digest_devices;
            ALTER TABLE digest_import_devices DROP COLUMN list_position, DROP COLUMN provider, DROP COLUMN topic,
                DROP COLUMN keys_p256dh, DROP COLUMN keys_auth;
            ALTER TABLE digest_outbox DROP COLUMN provider, DROP COLUMN target, DROP COLUMN headers, DROP COLUMN timing, DROP COLUMN due_local;
            CREATE VIEW digest_devices AS SELECT user_id, token, platform, registered_at FROM digest_import_devices;
            DROP TABLE digest_test_events, digest_test_sends;
            UPDATE digest_schema SET version = 10;
            INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at)
                VALUES ('2026-W45:u-before:t', '2026-W45', 'u-before', 'android', 'Default', '\(earlier)', '{}', now());
            """, url: url)
        let migrated = try await DigestBinary.run(["migrate", "--db", url])
        #expect(migrated.status == 0 && migrated.stdout.contains("schema upgraded from version 10 to 18"), "\(migrated.stdout)\(migrated.stderr)")
        let type = "SELECT data_type FROM information_schema.columns WHERE table_name = 'digest_outbox' AND column_name = 'message'"
        #expect(try cluster.sql(type, url: url) == "json")
        #expect(
            try cluster.sql("SELECT message::text FROM digest_outbox WHERE user_id = 'u-before'", url: url)
                == #"{"message": {"data": {"a": "1", "b": "2"}, "token": "t-before"}}"#)

        let dir = try TemporaryDirectory()
        let sqlite = dir.path("digest.sqlite")
        #expect(try await DigestBinary.run(["import", "--db", sqlite] + files).status == 0)
        for db in [sqlite, url] {
            let run = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"])
            #expect(run.status == 0 && run.stdout.contains("messages: 5 built, 5 enqueued"), "\(run.stdout)\(run.stderr)")
        }
        var expected: [String: String] = [:]
        let rows = try SQLiteConnection(path: sqlite).statement("SELECT dedupe_key, message FROM digest_outbox")
        while try rows.step() { expected[rows.string(0)] = rows.string(1) }
        var actual: [String: String] = [:]
        let lines = try cluster.sql("SELECT dedupe_key, message::text FROM digest_outbox WHERE week = '2026-W46'", url: url)
        for line in lines.split(separator: "\n") {
            let bar = try #require(line.firstIndex(of: "|"), "\(line)")  // a dedupe key holds no "|"
            actual[String(line[..<bar])] = String(line[line.index(after: bar)...])
        }
        #expect(expected.count == 5 && Set(actual.keys) == Set(expected.keys))
        for (key, message) in expected {
            #expect(actual[key].map(withoutIDPositions) == withoutIDPositions(message), "row \(key)")
            #expect(actual[key]?.utf8.count == message.utf8.count, "row \(key)")
        }
        // What is compared is the encoder's compact JSON, not a rendering of it.
        #expect(expected.values.allSatisfy { $0.hasPrefix(#"{"message":{"token":""#) && !$0.contains("\": ") })
    }

    /// An adopter's own tables, shaped their way, behind the four views: nothing imported into
    /// digest's tables, the same messages.
    @Test func viewsOverAnAdoptersOwnTablesGiveTheSameMessages() async throws {
        let cluster = try PostgresCluster.shared()
        let files = ["users", "articles", "reads"].map { Self.fixtures.appendingPathComponent("\($0).jsonl").path }
        let reference = try await database(with: files, on: cluster)
        #expect(try await DigestBinary.run(["run", "--db", reference, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"]).status == 0)
        let url = try await database(with: files, on: cluster)
        // Move the history into "the app's" tables, with its own names and types, and empty digest's.
        try cluster.sql(
            """
            CREATE TABLE app_accounts AS SELECT id AS account_ref, locale AS lang, time_zone AS tz,
                CASE WHEN opted_out THEN 'no' ELSE 'yes' END AS marketing FROM digest_import_users;
            CREATE TABLE app_push_tokens AS SELECT user_id AS account_ref, token AS push_token, upper(platform) AS os
                FROM digest_import_devices;
            CREATE TABLE app_stories AS SELECT id AS story_id, title AS headline, url AS link, image_url AS hero,
                array_to_string(topics, ',') AS tags, extract(epoch FROM published_at)::bigint AS published_unix,
                reading_minutes AS minutes FROM digest_import_articles;
            CREATE TABLE app_reading_log AS SELECT user_id AS account_ref, article_id AS story_id, read_at AS opened_at,
                seconds * 1000 AS dwell_ms FROM digest_import_reads;
            DELETE FROM digest_import_reads; DELETE FROM digest_import_devices; DELETE FROM digest_import_users;
            DELETE FROM digest_import_articles;
            DROP VIEW digest_users, digest_devices, digest_articles, digest_reads;
            CREATE VIEW digest_users AS
                SELECT account_ref::text AS id, lang AS locale, tz AS time_zone, marketing = 'no' AS opted_out FROM app_accounts;
            CREATE VIEW digest_devices AS
                SELECT account_ref::text AS user_id, push_token AS token, lower(os) AS platform FROM app_push_tokens;
            CREATE VIEW digest_articles AS
                SELECT story_id AS id, headline AS title, link AS url, hero AS image_url,
                       string_to_array(tags, ',') AS topics, to_timestamp(published_unix) AS published_at,
                       minutes AS reading_minutes FROM app_stories;
            CREATE VIEW digest_reads AS
                SELECT account_ref::text AS user_id, story_id AS article_id, opened_at AS read_at, dwell_ms / 1000 AS seconds
                FROM app_reading_log;
            """, url: url)
        #expect(try cluster.sql("SELECT count(*) FROM digest_import_reads", url: url) == "0")
        let run = try await DigestBinary.run(["run", "--db", url, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"])
        #expect(run.status == 0, "\(run.stderr)")
        let expected = try await outbox(reference)
        #expect(expected.count == 5)
        await #expect(try outbox(url) == expected)
        // Rolling runs walk `seq`, which this adopter's view lacks: one line saying what to do.
        let rolling = try await DigestBinary.run(["run", "--db", url, "--as-of", "2026-11-16T12:00:00Z"])
        let lines = rolling.stderr.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        #expect(rolling.status != 0 && lines.count == 1, "\(rolling.stderr)")
        #expect(rolling.stderr.contains("the digest_users view has no seq column"), "\(rolling.stderr)")
    }

    /// Hourly runs overlapping on PostgreSQL (a slow one, a fleet): rolling workers started together
    /// share the zones' chunks, and together with a later run they enqueue each message once.
    @Test func overlappingRollingRunsShareTheZonesAndDoubleNothing() async throws {
        let cluster = try PostgresCluster.shared()
        let url = try await database(with: try demoFiles(), on: cluster)
        let dir = try TemporaryDirectory()
        let arguments = ["run", "--db", url, "--as-of", "2026-11-16T12:00:00Z", "--chunk-size", "15", "--progress-interval", "0"]
        let workers = try ["r1", "r2", "r3"].map { try DigestBinary.start(arguments + ["--worker", $0], name: $0, in: dir.url) }
        var enqueued = 0
        for worker in workers {
            let output = try await worker.finish()
            #expect(output.status == 0, "\(output.stderr)")
            for line in output.stdout.split(separator: "\n") where line.hasPrefix("messages: ") {
                enqueued += Int(line.split(separator: " ")[3]) ?? 0
            }
        }
        let rows = try await outbox(url)
        await #expect(rows.count == (try eligibleDevices()))
        #expect(enqueued == rows.count, "each message enqueued by exactly one worker")
        let zoneChunks = try cluster.sql(
            "SELECT count(*) FILTER (WHERE state = 'done'), count(*), count(DISTINCT done_by) FROM digest_run_chunks WHERE time_zone IS NOT NULL",
            url: url)
        let fields = zoneChunks.split(separator: "|").compactMap { Int($0) }
        #expect(fields.count == 3 && fields[0] == fields[1] && fields[1] > 20 && fields[2] >= 2, "\(zoneChunks)")
        // The next hour finds every zone planned and done: nothing to enqueue.
        let next = try await DigestBinary.run(["run", "--db", url, "--as-of", "2026-11-16T13:00:00Z"])
        #expect(next.status == 0 && next.stdout.contains("0 enqueued"), "\(next.stdout)")
        await #expect(try outbox(url).count == rows.count)
    }

    @Test func threeWorkersShareTheWeekAndAKilledOnesChunkIsRedone() async throws {
        let cluster = try PostgresCluster.shared()
        let url = try await database(with: try demoFiles(), on: cluster)
        let dir = try TemporaryDirectory()
        let arguments = ["run", "--db", url, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z", "--chunk-size", "15", "--lease", "2", "--progress-interval", "0"]
        let first = try DigestBinary.start(arguments + ["--worker", "w1"], name: "w1", in: dir.url)
        let second = try DigestBinary.start(arguments + ["--worker", "w2"], name: "w2", in: dir.url)
        let third = try DigestBinary.start(arguments + ["--worker", "w3"], name: "w3", in: dir.url)
        // Kill the first worker once it has committed three chunks: it holds others it read ahead.
        let pid = first.process.processIdentifier
        let killer = Watcher.start(when: { first.lines(containing: "progress:") >= 4 }) { kill(pid, SIGKILL) }
        let deadline = Date().addingTimeInterval(120)
        while !killer.fired && first.process.isRunning && Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        killer.cancel()
        first.kill()
        #expect(killer.fired, "the first worker finished before it could be killed: \(first.stderr)")
        let held = try cluster.sql("SELECT count(*) FROM digest_run_chunks WHERE lease_owner = 'w1' AND state = 'claimed'", url: url)
        for worker in [second, third] {
            let output = try await worker.finish()
            #expect(output.status == 0, "\(output.stderr)")
        }
        let state = try chunks(cluster, url)
        #expect(state.total > 10 && state.done == state.total, "\(state)")
        // The killed worker's chunks were claimed again once their leases ended.
        if (Int(held) ?? 0) > 0 { #expect(state.claims >= state.total + (Int(held) ?? 0)) }
        let rows = try await outbox(url)
        await #expect(rows.count == (try eligibleDevices()))
        let done = try cluster.sql("SELECT count(DISTINCT done_by) FROM digest_run_chunks WHERE week = '2026-W46'", url: url)
        #expect((Int(done) ?? 0) >= 2)
        let status = try await DigestBinary.run(["run", "--db", url, "--status"])
        #expect(status.stdout.contains("2026-W46: done, \(state.total) chunks"), "\(status.stdout)")
    }

    @Test func aServerRestartMidRunIsRetriedAndLosesNothing() async throws {
        let cluster = try PostgresCluster()  // its own: the restart must not disturb other tests
        let url = try await database(with: try demoFiles(), on: cluster)
        let dir = try TemporaryDirectory()
        let run = try DigestBinary.start(
            ["run", "--db", url, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z", "--chunk-size", "15", "--progress-interval", "0", "--concurrency", "1"],
            name: "run", in: dir.url)
        // Restart from a watcher's thread as soon as four progress lines are out (a starved test
        // task could otherwise see the run finish first).
        let restarted = Watcher.start(when: { run.lines(containing: "progress:") >= 4 }) { try cluster.restart(downFor: 1.5) }
        let deadline = Date().addingTimeInterval(120)
        while !restarted.fired && run.process.isRunning && Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        restarted.cancel()
        #expect(restarted.fired, "the run finished before the restart: \(run.stderr)")
        #expect(restarted.error == nil, "the restart failed: \(restarted.error ?? "")")
        let output = try await run.finish()
        #expect(output.status == 0, "\(output.stderr)")
        let state = try chunks(cluster, url)
        #expect(state.done == state.total)
        await #expect(try outbox(url).count == (try eligibleDevices()))
    }

    @Test func connectionMistakesGiveOneClearLine() async throws {
        let cluster = try PostgresCluster.shared()
        let fresh = try cluster.makeDatabase("fresh")
        // A role with a password, checked by SCRAM on TCP (the rest of the cluster trusts loopback).
        let name = fresh.split(separator: "/").last!.split(separator: "?")[0]
        try cluster.sql("DO $$ BEGIN CREATE ROLE digest_pw LOGIN PASSWORD 'right-secret'; EXCEPTION WHEN duplicate_object THEN NULL; END $$", database: "postgres")
        let hba = try cluster.sql("SHOW hba_file", database: "postgres")
        let rules = try String(contentsOfFile: hba, encoding: .utf8)
        if !rules.hasPrefix("host all digest_pw") {
            try ("host all digest_pw 127.0.0.1/32 scram-sha-256\n" + rules).write(toFile: hba, atomically: false, encoding: .utf8)
            try cluster.sql("SELECT pg_reload_conf()", database: "postgres")
            try await Task.sleep(for: .milliseconds(300))
        }
        // Exit statuses: 78 for what a retry cannot fix, 75 for a server that is not there now.
        let cases: [(url: String, expected: String, status: Int32)] = [
            ("postgres://digest_pw:wrong-secret@127.0.0.1:\(cluster.port)/\(name)?sslmode=disable", "password authentication failed", 78),
            ("postgres://postgres@127.0.0.1:1/\(name)?sslmode=disable", "cannot connect", 75),
            (fresh, "run `digest migrate --db <url>` first", 78),
            ("postgres://postgres@127.0.0.1:\(cluster.port)/\(name)?sslmode=require", "does not offer TLS", 78),
        ]
        for (url, expected, status) in cases {
            let run = try await DigestBinary.run(["run", "--db", url, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"])
            let lines = run.stderr.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            #expect(run.status == status, "\(expected): \(run.status)")
            #expect(lines.count == 1, "\(run.stderr)")
            #expect(run.stderr.contains(expected), "\(run.stderr)")
            #expect(!run.stderr.contains("wrong-secret"))
        }
    }
}
