import DigestCore
import DigestStore
import DigestTesting
import Foundation
import Testing

@testable import DigestPostgres

/// A reader's data on PostgreSQL (docs/008): the conformance suite every store runs, and what only
/// this store has — run chunks whose boundaries are reader ids, the publisher's own views, a sender
/// settling a message a forget took, cursors over long lists, and the schema's reader columns all
/// known to forget.
@Suite struct PostgresReaderDataTests {
    @Test(arguments: ReaderDataConformanceTests.Case.allCases)
    func conformance(_ testCase: ReaderDataConformanceTests.Case) async throws {
        try await ReaderDataConformanceTests.run(testCase, on: .postgres)
    }

    static let now: Int64 = 1_795_000_000

    static func store(chunkSize: Int = 1000) async throws -> (StoreHarness, PostgresDatabase) {
        let store = try await StoreHarness(.postgres, chunkSize: chunkSize)
        return (store, store.database as! PostgresDatabase)
    }

    static func reader(_ id: String) -> ImportedUser {
        ImportedUser(
            reader: Reader(id: id, locale: "en", timeZone: "UTC", optedOut: false, devices: [Device(token: "tok-\(id)", platform: .android)]),
            preferences: nil, off: nil)
    }

    static func importReaders(_ ids: [String], into store: StoreHarness) async throws {
        let database = store.database as! PostgresDatabase
        _ = try await database.withImportSink { try await $0.write(.users(ids.map(Self.reader)), at: Self.now) }
    }

    /// The export of `id` as a JSON object, and its text.
    static func export(_ id: String, from database: PostgresDatabase) async throws -> (object: [String: Any], text: String)? {
        var bytes: [UInt8] = []
        guard try await database.exportReader(id, into: ReaderExport { bytes += $0 }) else {
            #expect(bytes.isEmpty)
            return nil
        }
        let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        return (try #require(object), String(decoding: bytes, as: UTF8.self))
    }

    /// The base tables of the store one of whose rows, as text, holds `id` as a word of its own (not
    /// within a longer id).
    static func tables(holding id: String, in store: StoreHarness) throws -> [String] {
        let tables = try store.sql(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1")
        return try tables.split(separator: "\n").map(String.init).filter { table in
            try store.sql("SELECT count(*) FROM \(table) x WHERE x::text ~ '(^|[^a-z0-9-])\(id)([^a-z0-9-]|$)'") != "0"
        }
    }

    /// What a forget of one reader of the conformance suite's population removes, by this store's
    /// tables: the import's tables and the preferences' (the suite checks only the store's own names).
    @Test func aForgetCountsEachTableItRemovesFrom() async throws {
        let (store, database) = try await Self.store()
        try await ReaderDataConformanceTests.populate(store, ["gone", "stays"])
        let outcome = try await database.forgetReaders(["gone"], dryRun: false)
        #expect(
            outcome
                == ForgetOutcome(
                    readers: 1, unknown: [],
                    removed: [
                        "digest_import_users": 1, "digest_import_devices": 3, "digest_import_reads": 2, "digest_import_reader_preferences": 1,
                        "digest_preference_changes": 3, "digest_outbox": 5, "digest_picks": 2, "digest_events": 3, "digest_test_sends": 1,
                        "digest_test_events": 1, "digest_dead_tokens": 1,
                    ]))
        #expect(try Self.tables(holding: "gone", in: store) == [])
        // Report totals stay as they were, counted without the reader: nothing added for their sent message.
        #expect(try store.sql("SELECT count(*) FROM digest_pruned_sent") == "0")
    }

    /// A table added later with a reader column (`user_id`, `user_pk`) fails here until forget and
    /// export know it; events are found through their message.
    @Test func everyTableWithAReaderColumnIsForgotten() async throws {
        let (store, _) = try await Self.store()
        let withReaderColumn = try store.sql(
            """
            SELECT DISTINCT c.table_name FROM information_schema.columns c
            JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
            WHERE c.table_schema = current_schema() AND c.column_name IN ('user_id', 'user_pk')
            ORDER BY 1
            """
        ).split(separator: "\n").map(String.init)
        #expect(withReaderColumn.contains("digest_outbox"))
        let expected = Set(withReaderColumn).union([
            "digest_import_users", "digest_import_reader_preferences", "digest_events", "digest_test_events", "digest_dead_tokens",
        ])
        let missing = expected.subtracting(PostgresDatabase.forgottenTables)
        #expect(missing.isEmpty, "not forgotten: \(missing.sorted())")
        let existing = Set(
            try store.sql("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()").split(separator: "\n")
                .map(String.init))
        #expect(PostgresDatabase.forgottenTables.subtracting(existing).isEmpty)
    }

    /// A running `--week` run split into chunks of two: a forget of readers who are chunk boundaries
    /// (one of a chunk a worker holds: the forget waits for it, and removes the message it wrote)
    /// leaves no id of theirs, and the workers claiming the rest digest every other reader exactly
    /// once.
    @Test func chunkBoundariesThatAreForgottenReadersMoveWithoutSkippingOrRepeatingAReader() async throws {
        let (store, database) = try await Self.store(chunkSize: 2)
        let ids = ["reader-a", "reader-b", "reader-c", "reader-d", "reader-e", "reader-f", "reader-g"]
        try await Self.importReaders(ids, into: store)
        let week = ISOWeek(utcInstant: Self.now)
        _ = try await store.withLedger { try await $0.begin(week: week, now: Self.now) }
        let bounds = "SELECT coalesce(after_user, '-'), coalesce(through_user, '-') FROM digest_run_chunks ORDER BY chunk"
        #expect(try store.sql(bounds) == "-|reader-b\nreader-b|reader-d\nreader-d|reader-f\nreader-f|-")

        let digested = try await store.withReader { reader in
            var digested: [String] = []
            let first = try #require(try await reader.nextBatch(week: week, after: -1, limit: 2))
            digested += first.users.map(\.reader.id)

            // The forget waits for the chunk holding reader-b, then removes what its worker wrote.
            let forgetting = Task { try await database.forgetReaders(["reader-b", "reader-d", "reader-e", "nobody"], dryRun: false) }
            try await Task.sleep(for: .milliseconds(700))
            #expect(try store.sql("SELECT count(*) FROM digest_import_users") == "7")
            let message = OutboxMessage(
                dedupeKey: "\(week):reader-b:h", week: week.description, userID: "reader-b", platform: .android, variant: .defaultText,
                message: Array(#"{"message":{"token":"tok-reader-b"}}"#.utf8), report: "{}", availableAt: Self.now, picks: ["article-1"])
            let inserted = try await store.withLedger {
                try await $0.commit(week: week, through: first.position, messages: [message], counters: RunCounters(), now: Self.now)
            }
            #expect(inserted == 1)
            let outcome = try await forgetting.value
            #expect(outcome.readers == 3)
            #expect(outcome.unknown == ["nobody"])
            #expect(outcome.removed["digest_outbox"] == 1 && outcome.removed["digest_picks"] == 1)
            #expect(try store.sql(bounds) == "-|reader-a\nreader-a|reader-c\nreader-c|reader-f\nreader-f|-")

            try await store.withLedger { ledger in
                while let batch = try await reader.nextBatch(week: week, after: -1, limit: 2) {
                    digested += batch.users.map(\.reader.id)
                    _ = try await ledger.commit(week: week, through: batch.position, messages: [], counters: RunCounters(), now: Self.now)
                }
            }
            return digested
        }
        // reader-b was read with the chunk claimed before the forget; the others once each.
        #expect(digested == ["reader-a", "reader-b", "reader-c", "reader-f", "reader-g"])
        for id in ["reader-b", "reader-d", "reader-e"] {
            #expect(try Self.tables(holding: id, in: store) == [], "\(id)")
        }
    }

    /// A rolling run's zone chunk held by a worker: a forget of a reader of that zone waits for it
    /// and removes what it wrote; a reader of another zone is forgotten at once.
    @Test func aForgetWaitsForAHeldZoneChunkOfItsReadersZoneOnly() async throws {
        let (store, database) = try await Self.store()
        _ = try await database.withImportSink { sink in
            try await sink.write(
                .users(
                    ["zone-a", "zone-b"].map(Self.reader) + [
                        ImportedUser(
                            reader: Reader(id: "zone-c", locale: "de", timeZone: "Europe/Berlin", optedOut: false, devices: []), preferences: nil,
                            off: nil)
                    ]), at: Self.now)
        }
        let week = ISOWeek(utcInstant: Self.now)
        try await store.withReader { reader in
            let cursors = try await store.withLedger { try await $0.zoneCursors(week: week, zones: ["UTC"], endsAt: [0], now: 1) }
            let batch = try await reader.nextBatch(week: week, zones: cursors, limit: 100)
            #expect(batch.users.map(\.reader.id) == ["zone-a", "zone-b"])
            // Berlin's reader: no chunk of theirs is held.
            #expect(try await database.forgetReaders(["zone-c"], dryRun: false).readers == 1)
            let forgetting = Task { try await database.forgetReaders(["zone-a"], dryRun: false) }
            try await Task.sleep(for: .milliseconds(700))
            #expect(try store.sql("SELECT count(*) FROM digest_import_users") == "2")
            let message = OutboxMessage(
                dedupeKey: "\(week):zone-a:h", week: week.description, userID: "zone-a", platform: .android, variant: .defaultText,
                message: Array(#"{"message":{"token":"tok-zone-a"}}"#.utf8), report: "{}", availableAt: Self.now)
            let inserted = try await store.withLedger {
                try await $0.commit(week: week, zones: batch.cursors, users: 2, messages: [message], counters: RunCounters(), now: Self.now)
            }
            #expect(inserted == 1)
            #expect(try await forgetting.value.removed["digest_outbox"] == 1)
        }
        #expect(try Self.tables(holding: "zone-a", in: store) == [])
        #expect(try store.sql("SELECT id FROM digest_import_users") == "zone-b")
    }

    /// A boundary with no staying reader below it becomes `''`, below every id: the first chunk then
    /// holds no one and the second everyone it held.
    @Test func aBoundaryWithNoReaderLeftBelowItBecomesTheEmptyString() async throws {
        let (store, database) = try await Self.store(chunkSize: 2)
        try await Self.importReaders(["reader-a", "reader-b", "reader-c", "reader-d"], into: store)
        let week = ISOWeek(utcInstant: Self.now)
        _ = try await store.withLedger { try await $0.begin(week: week, now: Self.now) }
        _ = try await database.forgetReaders(["reader-a", "reader-b"], dryRun: false)
        #expect(
            try store.sql("SELECT coalesce(after_user, '-'), coalesce(through_user, '-') FROM digest_run_chunks ORDER BY chunk")
                == "-|\n|reader-d\nreader-d|-")
        let digested = try await store.withReader { reader in
            try await store.withLedger { ledger in
                var digested: [String] = []
                while let batch = try await reader.nextBatch(week: week, after: -1, limit: 2) {
                    digested += batch.users.map(\.reader.id)
                    _ = try await ledger.commit(week: week, through: batch.position, messages: [], counters: RunCounters(), now: Self.now)
                }
                return digested
            }
        }
        #expect(digested == ["reader-c", "reader-d"])
    }

    /// A forget takes leased messages from under their sender: settling them (sent, or UNREGISTERED)
    /// changes nothing, throws nothing and leaves no dead-token entry; the sender's other messages
    /// settle as ever.
    @Test func aLeasedMessageForgottenSettlesAsNothingAndLeavesNoDeadToken() async throws {
        let (store, database) = try await Self.store()
        try await store.outbox(count: 4)
        try await store.withConsumer { consumer in
            let leased = try await consumer.lease(owner: "a", limit: 10, now: 10, leaseSeconds: 300, maxAttempts: 5, providers: [.fcm])
            #expect(leased.count == 4)
            let id = Dictionary(uniqueKeysWithValues: leased.map { ($0.userID, $0.id) })
            let outcome = try await database.forgetReaders(["u1", "u2"], dryRun: false)
            #expect(outcome.removed["digest_outbox"] == 2)
            let applied = try await consumer.settle(
                [
                    .sent(id: id["u1"]!, name: "n1"), .unregistered(id: id["u2"]!, reason: "UNREGISTERED: gone"),
                    .unregistered(id: id["u3"]!, reason: "UNREGISTERED: gone"), .sent(id: id["u4"]!, name: "n4"),
                ], owner: "a", now: 20, maxAttempts: 5)
            #expect(applied == 2)
        }
        #expect(try store.sql("SELECT token FROM digest_dead_tokens") == "tok-3")
        #expect(try store.sql("SELECT user_id, state FROM digest_outbox ORDER BY user_id") == "u3|dead\nu4|sent")
        for id in ["u1", "u2"] { #expect(try Self.tables(holding: id, in: store) == [], "\(id)") }
    }

    /// A sender settling a leased message UNREGISTERED while a forget of its reader runs: the forget
    /// waits for the settlement's row lock, and then removes the dead-token entry the settlement
    /// wrote with it (a settlement held open here by a third session's lock on its other row).
    @Test func aForgetWaitingForASettlementRemovesTheDeadTokenItWrote() async throws {
        let (store, database) = try await Self.store()
        try await store.outbox(count: 2)
        let leased = try await store.withConsumer {
            try await $0.lease(owner: "a", limit: 10, now: 10, leaseSeconds: 300, maxAttempts: 5, providers: [.fcm])
        }
        let id = Dictionary(uniqueKeysWithValues: leased.map { ($0.userID, $0.id) })
        let url = try #require(store.url)
        let holder = Thread {
            _ = try? PostgresCluster.shared().sql(
                "BEGIN; SELECT 1 FROM digest_outbox WHERE user_id = 'u2' FOR UPDATE; SELECT pg_sleep(60); COMMIT;", url: url)
        }
        holder.start()
        func waiting(_ count: Int) async throws {
            for _ in 0..<200 {
                let sessions = try store.sql(
                    """
                    SELECT count(*) FILTER (WHERE query LIKE '%pg_sleep(60)%' AND state = 'active'), count(*) FILTER (WHERE wait_event_type = 'Lock')
                    FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
                    """)
                if sessions == "1|\(count)" { return }
                try await Task.sleep(for: .milliseconds(50))
            }
            Issue.record("\(count) sessions never waited for a lock")
        }
        try await waiting(0)
        // The settlement marks u1's row dead and remembers its token, then waits for u2's row.
        let settling = Task {
            try await store.withConsumer {
                try await $0.settle(
                    [.unregistered(id: id["u1"]!, reason: "UNREGISTERED: gone"), .release(id: id["u2"]!, until: nil, reason: nil)], owner: "a",
                    now: 20, maxAttempts: 5)
            }
        }
        try await waiting(1)
        let forgetting = Task { try await database.forgetReaders(["u1"], dryRun: false) }
        try await waiting(2)
        // This database's holder only: the cluster is shared with other tests' sleeping sessions.
        try store.sql(
            """
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND query LIKE '%pg_sleep(60)%' AND pid <> pg_backend_pid()
            """)
        #expect(try await settling.value == 2)
        let outcome = try await forgetting.value
        #expect(outcome.removed["digest_outbox"] == 1)
        #expect(outcome.removed["digest_dead_tokens"] == 1)
        #expect(try store.sql("SELECT count(*) FROM digest_dead_tokens") == "0")
        #expect(try Self.tables(holding: "u1", in: store) == [])
    }

    /// A forget of a reader whose dead-token entry exists removes it, unless another reader's device
    /// holds the same token; the dry run counts the same and removes nothing.
    @Test func theDryRunCountsWhatTheForgetRemoves() async throws {
        let (store, database) = try await Self.store()
        try await store.outbox(count: 3)
        try store.sql(
            """
            INSERT INTO digest_import_devices (user_id, token, platform) VALUES ('u2', 'tok-1', 'android');
            INSERT INTO digest_dead_tokens VALUES ('tok-1', now(), 'UNREGISTERED'), ('tok-2', now(), 'UNREGISTERED');
            INSERT INTO digest_picks VALUES ('u1', '2026-W46', ARRAY['x']);
            """)
        let before = try store.sql("SELECT count(*) FROM digest_outbox")
        let dry = try await database.forgetReaders(["u1", "u1", "zz"], dryRun: true)
        #expect(try store.sql("SELECT count(*) FROM digest_outbox") == before)
        #expect(try store.sql("SELECT count(*) FROM digest_dead_tokens") == "2")
        let done = try await database.forgetReaders(["u1", "zz"], dryRun: false)
        #expect(dry == done)
        #expect(
            done
                == ForgetOutcome(
                    readers: 1, unknown: ["zz"],
                    removed: ["digest_import_users": 1, "digest_import_devices": 1, "digest_outbox": 1, "digest_picks": 1]))
        // tok-1 is u2's device too: its entry stays.
        #expect(try store.sql("SELECT token FROM digest_dead_tokens ORDER BY 1") == "tok-1\ntok-2")
        #expect(try await database.forgetReaders(["u2"], dryRun: false).removed["digest_dead_tokens"] == 2)
    }

    /// The history in the publisher's own views: forget removes what digest owns (the outbox, its
    /// events, picks, dead tokens), the advice names the views, and the export reads the views.
    @Test func withThePublishersViewsForgetRemovesDigestsRowsAndNamesTheViews() async throws {
        let (store, database) = try await Self.store()
        try store.sql(
            """
            CREATE TABLE app_accounts (ref text PRIMARY KEY, lang text, tz text, stopped boolean);
            INSERT INTO app_accounts VALUES ('p1', 'de', 'Europe/Berlin', false), ('p2', 'en', 'UTC', false);
            CREATE TABLE app_devices (account text, push text, os text);
            INSERT INTO app_devices VALUES ('p1', 'tok-p1', 'ios');
            CREATE TABLE app_reads (account text, article text, at timestamptz, secs int);
            INSERT INTO app_reads VALUES ('p1', 'art-1', to_timestamp(1795000000), 40);
            DROP VIEW digest_users;
            CREATE VIEW digest_users AS SELECT ref AS id, lang AS locale, tz AS time_zone, stopped AS opted_out FROM app_accounts;
            DROP VIEW digest_devices;
            CREATE VIEW digest_devices AS SELECT account AS user_id, push AS token, os AS platform FROM app_devices;
            DROP VIEW digest_reads;
            CREATE VIEW digest_reads AS SELECT account AS user_id, article AS article_id, at AS read_at, secs AS seconds FROM app_reads;
            """)
        try await store.write([FixtureMessage(user: "p1")])
        try store.sql(
            """
            UPDATE digest_outbox SET target = 'tok-p1';
            INSERT INTO digest_dead_tokens VALUES ('tok-p1', now(), 'UNREGISTERED');
            INSERT INTO digest_events (message_id, type, at, received_at, week, variant, platform)
                SELECT message_id, 'opened', now(), now(), week, variant, platform FROM digest_outbox;
            """)

        let exported = try #require(try await Self.export("p1", from: database))
        #expect(exported.object["preferences"] is NSNull)
        #expect((exported.object["reader"] as? [String: String]) == ["id": "p1", "locale": "de", "zone": "Europe/Berlin"])
        let devices = try #require(exported.object["devices"] as? [[String: Any]])
        #expect(devices.count == 1)
        #expect(devices.first?["provider"] as? String == "fcm")
        #expect((devices.first?["dead"] as? [String: String])?["reason"] == "UNREGISTERED")
        #expect((exported.object["reads"] as? [[String: Any]])?.count == 1)
        #expect((exported.object["events"] as? [[String: Any]])?.count == 1)

        let outcome = try await database.forgetReaders(["p1", "p2", "p3"], dryRun: false)
        #expect(
            outcome
                == ForgetOutcome(readers: 2, unknown: ["p3"], removed: ["digest_outbox": 1, "digest_events": 1, "digest_dead_tokens": 1]))
        guard case .advice(let advice) = try await database.finishForgetting(wait: .seconds(1)) else {
            Issue.record("no advice")
            return
        }
        #expect(advice.contains { $0.hasPrefix("digest_devices, digest_reads, digest_users are the publisher's own views") }, "\(advice)")
        #expect(advice.contains { $0.contains("VACUUM digest_dead_tokens, digest_events") })
        // The publisher's rows are theirs to delete; digest's are gone.
        #expect(try Self.tables(holding: "p1", in: store).sorted() == ["app_accounts", "app_devices", "app_reads"])
    }

    /// The advice of digest's own views: dead tuples and WAL, no view named.
    @Test func theAdviceOfDigestsOwnViewsNamesNoView() async throws {
        let (store, database) = try await Self.store()
        let residue = try await database.finishForgetting(wait: .seconds(1))
        withExtendedLifetime(store) {}
        guard case .advice(let advice) = residue else {
            Issue.record("no advice")
            return
        }
        #expect(advice.count == 2)
        #expect(advice.allSatisfy { !$0.contains("publisher") })
    }

    /// A reader with 150,000 reads exports in pieces of about 64 KiB while the reads come a fetch of
    /// the cursor at a time: the pieces go out between fetches (the export's session, looked at as
    /// each piece goes, has run many different ones), never after all rows were read.
    @Test func anExportOf150000ReadsStreamsBetweenFetches() async throws {
        let (store, database) = try await Self.store()
        try await Self.importReaders(["many"], into: store)
        try store.sql(
            """
            INSERT INTO digest_import_reads
            SELECT 'many', to_timestamp(1700000000 + g * 60), 'article-1', g % 300 FROM generate_series(1, 150000) g
            """)
        var written = 0, largest = 0
        var fetches = Set<String>()
        var tail: [UInt8] = []
        let export = ReaderExport { piece in
            written += piece.count
            largest = max(largest, piece.count)
            tail = Array(piece.suffix(200))
            let last = try store.sql(
                """
                SELECT query_start FROM pg_stat_activity
                WHERE datname = current_database() AND query LIKE 'FETCH % FROM digest_export' AND pid <> pg_backend_pid()
                """)
            if !last.isEmpty { fetches.insert(last) }
        }
        #expect(try await database.exportReader("many", into: export))
        #expect(written > 7_000_000)
        #expect(largest < 1 << 17)
        // 30 fetches of 5,000 reads (a piece may go out while the next one runs).
        #expect(PostgresReaderData.batch == 5_000)
        #expect(fetches.count >= 25, "pieces went out after \(fetches.count) different fetches")
        let text = String(decoding: tail, as: UTF8.self)
        #expect(text.hasSuffix("}\n") && text.contains(#""read_at":"\#(Timestamp.format(1_700_000_000 + 150_000 * 60))""#))
    }

    /// An export streams its long lists through cursors: 12,000 reads (more than two fetches) come
    /// whole and oldest first; messages with their events, devices of every provider with their keys
    /// and dead-token entry, and test sends with their events, in the sections' order.
    @Test func theExportStreamsEverySectionFromOneSnapshot() async throws {
        let (store, database) = try await Self.store()
        try await Self.importReaders(["x", "y"], into: store)
        try store.sql(
            """
            INSERT INTO digest_import_devices (user_id, token, platform, provider, topic, registered_at, list_position)
                VALUES ('x', 'apns-x', 'ios', 'apns', 'com.example.news', to_timestamp(1795000000), 1);
            INSERT INTO digest_import_devices (user_id, token, platform, provider, keys_p256dh, keys_auth)
                VALUES ('x', 'https://push.example/x', 'web', 'webpush', 'BPkey', 'authkey');
            INSERT INTO digest_dead_tokens VALUES ('apns-x', to_timestamp(1795000100), 'Unregistered');
            INSERT INTO digest_import_reads SELECT 'x', to_timestamp(1700000000 + g), 'art-' || g, 30 FROM generate_series(1, 12000) g;
            INSERT INTO digest_import_reads VALUES ('y', to_timestamp(1700000000), 'art-y', 5);
            INSERT INTO digest_picks VALUES ('x', '2026-W47', ARRAY['art-1', 'art-2']);
            """)
        try await store.write([
            FixtureMessage(user: "x"), FixtureMessage(user: "x", platform: .ios, sent: false), FixtureMessage(user: "y"),
        ])
        try store.sql(
            """
            INSERT INTO digest_events (message_id, type, action, at, received_at, week, variant, platform)
                SELECT message_id, t, a, to_timestamp(1795424500), to_timestamp(1795424600), week, variant, platform
                FROM digest_outbox, (VALUES ('opened', ''), ('action', 'fewer')) AS v(t, a);
            """)
        #expect(
            try await database.recordTestSend(
                TestSend(
                    messageID: "test-1", device: "pixel", userID: "x", week: "2026-W47", provider: .fcm, platform: "android",
                    variant: "big_text"),
                now: Self.now, perMinute: 5))
        try store.sql("INSERT INTO digest_test_events VALUES ('test-1', 'received', '', to_timestamp(1795000010), to_timestamp(1795000020))")
        _ = try await database.setPreferences(
            of: "x", to: ReaderPreferences(every: 2), ifVersion: nil, source: .api, messageID: nil, at: Self.now)

        let (object, text) = try #require(try await Self.export("x", from: database))
        let keys = ReaderExport.Section.allCases.map(\.rawValue)
        var place = text.startIndex
        for key in keys {
            let found = try #require(text.range(of: "\"\(key)\":", range: place..<text.endIndex), "\(key)")
            place = found.upperBound
        }
        #expect(text.hasSuffix("}\n"))
        let preferences = try #require(object["preferences"] as? [String: Any])
        #expect(preferences["every"] as? Int == 2)
        #expect(preferences["version"] as? Int == 1)
        #expect((object["preference_changes"] as? [[String: Any]])?.first?["source"] as? String == "api")
        let devices = try #require(object["devices"] as? [[String: Any]])
        #expect(devices.map { $0["token"] as? String } == ["tok-x", "apns-x", "https://push.example/x"])
        #expect(devices[1]["topic"] as? String == "com.example.news")
        #expect(devices[1]["registered_at"] as? String == Timestamp.format(1_795_000_000))
        #expect((devices[1]["dead"] as? [String: String]) == ["died_at": Timestamp.format(1_795_000_100), "reason": "Unregistered"])
        #expect((devices[2]["keys"] as? [String: String]) == ["p256dh": "BPkey", "auth": "authkey"])
        let reads = try #require(object["reads"] as? [[String: Any]])
        #expect(reads.count == 12_000)
        #expect(reads.first?["article_id"] as? String == "art-1")
        #expect(reads.last?["read_at"] as? String == Timestamp.format(1_700_012_000))
        let messages = try #require(object["messages"] as? [[String: Any]])
        #expect(messages.map { $0["state"] as? String } == ["sent", "ready"])
        #expect(messages.first?["message"] is [String: Any])
        #expect((object["picks"] as? [[String: Any]])?.first?["article_ids"] as? [String] == ["art-1", "art-2"])
        let events = try #require(object["events"] as? [[String: Any]])
        #expect(events.count == 4)
        #expect(events.filter { $0["action"] == nil }.count == 2)
        let sends = try #require(object["test_sends"] as? [[String: Any]])
        #expect(sends.count == 1)
        #expect((sends.first?["events"] as? [[String: Any]])?.first?["type"] as? String == "received")
        #expect(try await Self.export("nobody", from: database) == nil)

        // Forget takes all of it, and nothing of y.
        let outcome = try await database.forgetReaders(["x"], dryRun: false)
        #expect(outcome.removed["digest_import_reads"] == 12_000)
        #expect(outcome.removed["digest_events"] == 4)
        #expect(outcome.removed["digest_test_events"] == 1)
        #expect(outcome.removed["digest_preference_changes"] == 1)
        #expect(try store.sql("SELECT count(*) FROM digest_import_reads WHERE user_id = 'y'") == "1")
        #expect(try store.sql("SELECT count(*) FROM digest_events") == "2")
        #expect(try await Self.export("x", from: database) == nil)
    }
}
