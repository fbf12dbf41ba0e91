import DigestCore
import DigestImages
import DigestStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Retention (`digest queue prune`) on SQLite and on PostgreSQL, at a fixed instant: settled messages
/// go by their settle time, the rest stay; picks stay for the weeks a digest still reads; attachment
/// files stay while a live message links them or they are recent.
@Suite struct OutboxRetentionTests {
    /// Wednesday 16 December 2026, 12:00 UTC (week 2026-W51).
    static let now = Timestamp.parse("2026-12-16T12:00:00Z")!
    static let day: Int64 = 86_400

    /// `t` as the store keeps it, for SQL written by the test.
    static func time(_ t: Int64?, _ backend: Backend) -> String {
        guard let t else { return "NULL" }
        return backend == .sqlite ? "\(t)" : "to_timestamp(\(t))"
    }

    /// One commit of `messages` (their picks written with them), as a run's would be.
    static func enqueue(_ messages: [OutboxMessage], into store: StoreHarness) async throws {
        let week = try ISOWeek(parsing: "2026-W46")
        try await store.withLedger { ledger in
            _ = try await ledger.begin(week: week, now: 0)
            _ = try await ledger.commit(week: week, through: 0, messages: messages, counters: RunCounters(), now: 0)
        }
    }

    static func message(
        _ user: String, week: String = "2026-W46", variant: Variant = .defaultText, platform: Platform = .android,
        body: String? = nil, picks: [String] = [], availableAt: Int64 = 0, expiresAt: Int64? = nil
    ) -> OutboxMessage {
        OutboxMessage(
            dedupeKey: "\(week):\(user):h-\(user)", week: week, userID: user, platform: platform, variant: variant,
            message: Array((body ?? #"{"message":{"token":"tok-\#(user)"}}"#).utf8), report: "{}", availableAt: availableAt,
            picks: picks, expiresAt: expiresAt)
    }

    /// Sets a row's delivery columns as a consumer (or an older one, without `settled_at`) left them.
    static func settle(
        _ user: String, _ state: String, in store: StoreHarness, settledAt: Int64? = nil, sentAt: Int64? = nil,
        availableAt: Int64? = nil, expiresAt: Int64? = nil
    ) throws {
        let b = store.backend
        var sets = ["state = '\(state)'", "settled_at = \(time(settledAt, b))", "sent_at = \(time(sentAt, b))"]
        if let availableAt { sets.append("available_at = \(time(availableAt, b))") }
        if let expiresAt { sets.append("expires_at = \(time(expiresAt, b))") }
        try store.sql("UPDATE digest_outbox SET \(sets.joined(separator: ", ")) WHERE user_id = '\(user)'")
    }

    static func users(in store: StoreHarness) throws -> Set<String> {
        Set(try store.sql("SELECT user_id FROM digest_outbox").split(separator: "\n").map(String.init))
    }

    @Test func aRetentionShorterThanTheMinimumIsRefusedNamingIt() throws {
        #expect(OutboxRetention.minimumAge == 28 * Self.day)
        #expect(OutboxRetention.defaultAge == 56 * Self.day)
        #expect(throws: RetentionError.self) { try OutboxRetention(age: 28 * Self.day - 1) }
        do {
            _ = try OutboxRetention(age: 21 * Self.day)
            Issue.record("21 days must be refused")
        } catch {
            #expect(error.description == "21d is shorter than the minimum retention of 28d: the messages' 7d TTL plus the digest's own week and the 2 weeks whose picks it does not repeat")
        }
        #expect(try OutboxRetention(age: 28 * Self.day).cutoff(now: Self.now) == Self.now - 28 * Self.day)
        #expect(OutboxRetention.parse("30d") == 30 * Self.day && OutboxRetention.parse("8w") == 56 * Self.day)
        #expect(OutboxRetention.parse("720h") == 30 * Self.day && OutboxRetention.parse("3600") == 3600)
        #expect(OutboxRetention.parse("d") == nil && OutboxRetention.parse("-3d") == nil && OutboxRetention.parse("30 days") == nil)
    }

    /// Sent, dead and expired messages go once their settle time is older than the retention: new rows
    /// by `settled_at`, rows settled before the column by `sent_at`, `expires_at` or `available_at`;
    /// ready and leased ones stay however old; a dead message requeued is no longer settled; the
    /// consumer's TTL expiry counts from the sweep that expired the message, not from `expires_at`.
    @Test(arguments: Backend.allCases) func settledMessagesGoByTheirSettleTimeInBatches(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let retention = try OutboxRetention(age: 30 * Self.day, batchSize: 2)
        let cutoff = retention.cutoff(now: Self.now)
        let old = cutoff - Self.day
        let young = cutoff + Self.day
        try await Self.enqueue(
            ["sentOld", "sentYoung", "deadOld", "deadYoung", "expiredOld", "expiredYoung", "legacySentOld", "legacyDeadOld",
             "legacyDeadYoung", "legacyExpiredOld", "readyAncient", "leasedAncient", "requeued", "sweptLate"].map { Self.message($0) },
            into: store)
        try Self.settle("sentOld", "sent", in: store, settledAt: old, sentAt: old)
        try Self.settle("sentYoung", "sent", in: store, settledAt: young, sentAt: young)
        try Self.settle("deadOld", "dead", in: store, settledAt: old)
        try Self.settle("deadYoung", "dead", in: store, settledAt: young, availableAt: old - 10 * Self.day)
        try Self.settle("expiredOld", "expired", in: store, settledAt: old, expiresAt: old)
        try Self.settle("expiredYoung", "expired", in: store, settledAt: young, expiresAt: old - Self.day)
        try Self.settle("legacySentOld", "sent", in: store, sentAt: old)
        try Self.settle("legacyDeadOld", "dead", in: store, availableAt: old)
        try Self.settle("legacyDeadYoung", "dead", in: store, availableAt: young)
        try Self.settle("legacyExpiredOld", "expired", in: store, expiresAt: old)
        try Self.settle("readyAncient", "ready", in: store, availableAt: old - 300 * Self.day)
        try store.sql("UPDATE digest_outbox SET state = 'leased', lease_owner = 'gone', leased_until = \(Self.time(old, backend)) WHERE user_id = 'leasedAncient'")
        // Killed long ago, then requeued: ready again, its settle time cleared.
        try Self.settle("requeued", "dead", in: store, settledAt: old - 5 * Self.day)
        try store.sql("UPDATE digest_outbox SET last_error = 'UNAVAILABLE: 503' WHERE user_id = 'requeued'")
        #expect(try await store.withConsumer { try await $0.requeueDead(reasonPrefix: "UNAVAILABLE", week: nil, now: young) } == 1)
        // Its TTL ended long before the cutoff, but no sender looked until after it: it counts from then.
        // (The lease call also returns the lapsed lease of leasedAncient: ready, still unsettled.)
        try store.sql(
            "UPDATE digest_outbox SET available_at = \(Self.time(old - 20 * Self.day, backend)), expires_at = \(Self.time(old - 13 * Self.day, backend)) WHERE user_id = 'sweptLate'")
        let swept = try await store.withConsumer { consumer in
            try await consumer.lease(owner: "late", limit: 0, now: young, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm])
        }
        #expect(swept.isEmpty)
        #expect(try store.rows().values.contains { $0.state == .expired && $0.settledAt == young })
        #expect(try store.rows().values.filter { $0.state == .ready }.allSatisfy { $0.settledAt == nil })

        let dry = try OutboxRetention(age: 30 * Self.day, batchSize: 2, dryRun: true)
        let expected = OutboxPruneResult(messages: ["sent": 2, "dead": 2, "expired": 2], picks: 0)
        #expect(try await store.database.prune(dry, now: Self.now) == expected)
        #expect(try Self.users(in: store).count == 14, "a dry run deletes nothing")

        #expect(try await store.database.prune(retention, now: Self.now) == expected)
        #expect(
            try Self.users(in: store)
                == ["sentYoung", "deadYoung", "expiredYoung", "legacyDeadYoung", "readyAncient", "leasedAncient", "requeued", "sweptLate"])
        #expect(try await store.database.prune(retention, now: Self.now) == OutboxPruneResult(), "nothing left to prune")
    }

    /// Picks go only for weeks no digest still to come reads: at the minimum retention the current week
    /// and the six before it stay (the oldest week a catching-up rolling run walks, three back, reads
    /// the two before it), in batches along the key.
    @Test(arguments: Backend.allCases) func picksStayForTheWeeksTheNoRepeatRuleStillReads(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let retention = try OutboxRetention(age: OutboxRetention.minimumAge, batchSize: 4)
        #expect(retention.firstKeptPicksWeek(now: Self.now).description == "2026-W45")
        let weeks = (40...51).map { "2026-W\($0)" }
        try await Self.enqueue(
            ["a", "b", "c"].flatMap { user in weeks.map { Self.message(user, week: $0, picks: ["p-\(user)-\($0)"], availableAt: Self.now) } },
            into: store)
        #expect(try store.sql("SELECT count(*) FROM digest_picks") == "36")
        #expect(try await store.database.prune(retention, now: Self.now) == OutboxPruneResult(picks: 15))
        let left = try store.sql("SELECT DISTINCT week FROM digest_picks ORDER BY week").split(separator: "\n").map(String.init)
        #expect(left == (45...51).map { "2026-W\($0)" })
        #expect(try store.sql("SELECT count(*) FROM digest_picks") == "21")
        #expect(try store.sql("SELECT count(*) FROM digest_outbox") == "36", "ready messages stay")
        // A longer retention keeps more weeks.
        #expect(try OutboxRetention(age: 8 * OutboxRetention.week).firstKeptPicksWeek(now: Self.now).description == "2026-W41")
    }

    /// Files a message within its TTL links to stay (ready and leased messages; sent and dead ones
    /// until `expires_at`), whatever base URL it names them under; so do files modified within the
    /// grace period. Other renditions go, with leftover temporary files, memo entries past their
    /// lifetime or naming a file that went, and unreadable entries older than the grace period.
    @Test(arguments: Backend.allCases) func attachmentFilesStayWhileLinkedOrRecent(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let files = try TemporaryDirectory()
        let dir = URL(fileURLWithPath: files.path("attachments"), isDirectory: true)
        try FileManager.default.createDirectory(at: dir.appendingPathComponent(".urls"), withIntermediateDirectories: true)
        func name(_ digit: Character, _ ext: String = "jpg") -> String { String(repeating: digit, count: 32) + "." + ext }
        let (hero, icon, iosHero, expiredWeb, deadHero, unlinked, recent, expiredHero) =
            (name("a"), name("b", "png"), name("c"), name("d"), name("e", "gif"), name("f"), name("0"), name("1"))
        let cdn = "https://cdn.example/digest"
        try await Self.enqueue(
            [
                Self.message(
                    "ready", variant: .image, body: #"{"message":{"token":"t1","android":{"data":{"imageUrl":"\#(cdn)/\#(hero)","iconUrl":"\#(cdn)/\#(icon)"}}}}"#),
                Self.message(
                    "sentLive", variant: .image, platform: .ios,
                    body: #"{"message":{"token":"t2","apns":{"payload":{"aps":{},"imageUrl":"file:///srv/old/\#(iosHero)"},"fcm_options":{"image":"file:///srv/old/\#(iosHero)"}}}}"#),
                Self.message(
                    "sentOver", variant: .image, platform: .web,
                    body: #"{"message":{"token":"t3","webpush":{"notification":{"image":"\#(cdn)/\#(expiredWeb)","icon":"\#(cdn)/\#(expiredWeb)"}}}}"#),
                Self.message(
                    "deadLive", variant: .image, body: #"{"message":{"token":"t4","android":{"data":{"imageUrl":"\#(cdn)/\#(deadHero)"}}}}"#),
                Self.message(
                    "expired", variant: .image, body: #"{"message":{"token":"t5","android":{"data":{"imageUrl":"\#(cdn)/\#(expiredHero)"}}}}"#),
            ], into: store)
        try Self.settle("sentLive", "sent", in: store, settledAt: Self.now - Self.day, sentAt: Self.now - Self.day, expiresAt: Self.now + 3 * Self.day)
        try Self.settle("sentOver", "sent", in: store, settledAt: Self.now - 8 * Self.day, sentAt: Self.now - 8 * Self.day, expiresAt: Self.now - Self.day)
        try Self.settle("deadLive", "dead", in: store, settledAt: Self.now - Self.day, expiresAt: Self.now + 2 * Self.day)
        try Self.settle("expired", "expired", in: store, settledAt: Self.now - 2 * Self.day, expiresAt: Self.now - 2 * Self.day)
        let urls = try await store.database.liveImageURLs(now: Self.now)
        #expect(urls == ["\(cdn)/\(hero)", "\(cdn)/\(icon)", "file:///srv/old/\(iosHero)", "\(cdn)/\(deadHero)"])

        let old = Self.now - 10 * Self.day
        func write(_ name: String, bytes: Int, in folder: URL = dir, modified: Int64 = old) throws {
            let path = folder.appendingPathComponent(name).path
            try Data(repeating: 7, count: bytes).write(to: URL(fileURLWithPath: path))
            var times = [timeval(tv_sec: Int(modified), tv_usec: 0), timeval(tv_sec: Int(modified), tv_usec: 0)]
            #expect(utimes(path, &times) == 0)
        }
        for kept in [hero, icon, iosHero, deadHero] { try write(kept, bytes: 50) }
        try write(expiredWeb, bytes: 100)
        try write(unlinked, bytes: 200)
        try write(expiredHero, bytes: 300)
        try write(recent, bytes: 400, modified: Self.now - 3600)
        try write("notes.txt", bytes: 10)
        try write(".\(unlinked).4711.99.tmp", bytes: 7)
        try write(".\(recent).4711.98.tmp", bytes: 8, modified: Self.now - 60)
        let memo = dir.appendingPathComponent(".urls")
        func entry(_ key: Character, fetchedAt: Int64, hero: String? = nil, failure: String? = nil) throws {
            let file = hero.map { #","hero":{"name":"\#($0)","mimeType":"image/jpeg","width":1024,"height":512,"bytes":50}"# } ?? ""
            let json = #"{"version":1,"url":"https://img.example/\#(key)","fetchedAt":\#(fetchedAt),"settings":"s"\#(file)\#(failure.map { #","failure":"\#($0)""# } ?? "")}"#
            try Data(json.utf8).write(to: memo.appendingPathComponent(String(repeating: key, count: 32) + ".json"))
        }
        try entry("1", fetchedAt: Self.now - Self.day, hero: hero)
        try entry("2", fetchedAt: Self.now - 7 * Self.day, hero: iosHero)
        try entry("3", fetchedAt: Self.now - Self.day, hero: unlinked)
        try entry("4", fetchedAt: Self.now - Self.day, failure: "http_404")
        try write(String(repeating: "5", count: 32) + ".json", bytes: 3, in: memo, modified: Self.now - 2 * Self.day)
        try write(String(repeating: "6", count: 32) + ".json", bytes: 3, in: memo, modified: Self.now - 60)

        var configuration = AttachmentSweep.Configuration(directory: dir)
        configuration.dryRun = true
        let linked = AttachmentSweep.linkedNames(urls)
        #expect(linked == [hero, icon, iosHero, deadHero])
        let dry = try AttachmentSweep(configuration: configuration).run(keeping: linked, now: Self.now)
        var expected = AttachmentSweep.Result()
        expected.files = 4
        expected.bytes = 607
        expected.memoEntries = 3
        expected.linked = 4
        expected.recent = 1
        #expect(dry == expected)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).count == 12, "a dry run deletes nothing")

        configuration.dryRun = false
        #expect(try await AttachmentSweep(configuration: configuration).sweep(keeping: linked, now: Self.now) == expected)
        #expect(
            Set(try FileManager.default.contentsOfDirectory(atPath: dir.path))
                == [hero, icon, iosHero, deadHero, recent, "notes.txt", ".\(recent).4711.98.tmp", ".urls"])
        #expect(
            Set(try FileManager.default.contentsOfDirectory(atPath: memo.path))
                == Set(["1", "4", "6"].map { String(repeating: $0, count: 32) + ".json" }))
    }

    /// A Web Push row's plaintext names its hero and icon renditions as `image` and `icon` at its top:
    /// files a prune keeps while the row is within its TTL.
    @Test(arguments: Backend.allCases) func aWebPushPlaintextsImagesAreLinked(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let (hero, icon) = ("https://cdn.example/digest/" + String(repeating: "a", count: 32) + ".jpg", "https://cdn.example/digest/" + String(repeating: "b", count: 32) + ".png")
        var message = Self.message(
            "web", variant: .image, platform: .web, body: #"{"title":"T","body":"B","icon":"\#(icon)","image":"\#(hero)","tag":"digest-2026-W46"}"#)
        message.provider = .webpush
        message.target = "https://push.example.net/e/1"
        try await Self.enqueue([message], into: store)
        #expect(try await store.database.liveImageURLs(now: Self.now) == [hero, icon])
    }
}
