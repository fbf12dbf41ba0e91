import DigestCore
import DigestStore
import Foundation
import Testing
import DigestImport

/// The store's operations on SQLite and on PostgreSQL: migrations, import, history reading, the
/// run's ledger and the outbox views give the same answers on both.
@Suite struct StoreConformanceTests {
    static let week = try! ISOWeek(parsing: "2026-W46")

    func message(_ key: String, user: String = "u1", due: Int64 = 1_795_334_400) -> OutboxMessage {
        OutboxMessage(
            dedupeKey: key, week: String(key.prefix(8)), userID: user, platform: .android, variant: .bigText,
            message: Array(#"{"message":{"token":"t","data":{"a":"1"}}}"#.utf8), report: #"{"rules":[]}"#, availableAt: due)
    }

    @Test(arguments: Backend.allCases) func migrationsAreRecordedAndRepeatable(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let again = try await store.database.migrate()
        #expect(again.from == again.to && again.to >= 1)
    }

    @Test(arguments: Backend.allCases) func commitsAreIdempotentAndCarryTheRunsCounters(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        try await store.outbox(count: 1)  // a user, so PostgreSQL splits the week into one chunk
        let week = try ISOWeek(parsing: "2026-W45")
        let batch = [message("2026-W45:u1:a"), message("2026-W45:u1:b")]
        try await store.withLedger { ledger in
            let start = try await ledger.begin(week: week, now: 100)
            #expect(start.cursor == 0 && !start.finished)
            var counters = RunCounters()
            counters.users = 2
            counters.messages = 2
            #expect(try await ledger.commit(week: week, through: 0, messages: batch, counters: counters, now: 100) == 2)
            // The same batch again (a redone batch after a crash) adds nothing.
            #expect(try await ledger.commit(week: week, through: 0, messages: batch, counters: counters, now: 101) == 0)
            let totals = try await ledger.finish(week: week, now: 102)
            #expect(totals.enqueued == 2)
        }
        let resumed = try await store.withLedger { try await $0.begin(week: week, now: 103) }
        #expect(resumed.counters.enqueued == 2)
        #expect(resumed.finished)
        let stats = try await store.database.outboxStats(now: 0)
        #expect(stats.byWeek["2026-W45"] == 2 && stats.byState["ready"] == 3 && stats.total == 3)
    }

    /// A row keeps its message's id (from the dedupe key) and the locale that composed it; an id is
    /// unique, so no two rows can answer one event.
    @Test(arguments: Backend.allCases) func rowsKeepTheMessageIDAndLocale(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        try await store.outbox(count: 1)
        var withLocale = message("2026-W45:u1:a")
        withLocale.locale = "pl"
        try await store.withLedger { ledger in
            _ = try await ledger.begin(week: try ISOWeek(parsing: "2026-W45"), now: 100)
            _ = try await ledger.commit(
                week: try ISOWeek(parsing: "2026-W45"), through: 0, messages: [withLocale, message("2026-W45:u1:b")],
                counters: RunCounters(), now: 100)
        }
        let rows = try await store.database.outboxRows(week: "2026-W45", userID: "u1")
        #expect(rows.map(\.messageID) == [
            OutboxMessage.messageID(dedupeKey: "2026-W45:u1:a"), OutboxMessage.messageID(dedupeKey: "2026-W45:u1:b"),
        ])
        #expect(rows.map(\.locale) == ["pl", nil])
        #expect(rows.allSatisfy { $0.messageID?.utf8.count == OutboxMessage.messageIDLength })
        #expect(try store.sql("SELECT count(*) FROM digest_outbox WHERE message_id IS NOT NULL") == "3")
    }

    @Test(arguments: Backend.allCases) func outboxViewsFindAUsersMessages(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        try await store.outbox(count: 3)
        let rows = try await store.database.outboxRows(week: "2026-W46", userID: "u2")
        #expect(rows.count == 1)
        #expect(rows.first?.dedupeKey == "2026-W46:u2:h2" && rows.first?.state == .ready && rows.first?.attempts == 0)
        let body = try JSONSerialization.jsonObject(with: Data(rows.first!.message.utf8)) as? [String: [String: String]]
        #expect(body?["message"]?["token"] == "tok-2")
        #expect(try await store.database.outboxWeeks(userID: "u2") == ["2026-W46"])
        #expect(try await store.database.peek(limit: 2, state: .ready).map(\.userID) == ["u1", "u2"])
        #expect(try await store.database.peek(limit: 2, state: .dead).isEmpty)
    }

    @Test(arguments: Backend.allCases) func aRowOfAVariantThisVersionDoesNotKnowIsAnErrorNamingIt(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        try await store.outbox(count: 2)
        _ = try store.sql("UPDATE digest_outbox SET variant = 'Carousel' WHERE user_id = 'u2'")
        #expect(try await store.database.outboxRows(week: "2026-W46", userID: "u1").map(\.variant) == [.defaultText])
        do {
            _ = try await store.database.peek(limit: 5, state: nil)
            Issue.record("a row of an unknown variant was read")
        } catch let error as UnknownOutboxValue {
            #expect(error.column == "variant" && error.value == "Carousel")
            #expect(error.description.contains("unknown variant 'Carousel'"), "\(error)")
        }
    }

    @Test(arguments: Backend.allCases) func importingTwiceChangesNothingAndDroppedDevicesGo(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let users = try store.directory.write("users.jsonl", lines: [
            #"{"id":"u1","locale":"pl-PL","timeZone":"Europe/Warsaw","devices":[{"token":"t1","platform":"ios"},{"token":"t2","platform":"web"}]}"#
        ])
        let fewer = try store.directory.write("users2.jsonl", lines: [
            #"{"id":"u1","locale":"pl-PL","timeZone":"Europe/Warsaw","devices":[{"token":"t2","platform":"web"}]}"#
        ])
        let reads = try store.directory.write("reads.jsonl", lines: [
            #"{"userId":"u1","articleId":"nope","readAt":"2026-11-17T19:22:05Z","seconds":3}"#,
            #"{"userId":"nobody","articleId":"nope","readAt":"2026-11-17T19:22:05Z","seconds":3}"#,
        ])
        try await store.withImporter { importer async throws in
            #expect(try await importer.importFile(users, as: .users).written == 1)
            let again = try await importer.importFile(users, as: .users)
            #expect(again.written == 0 && again.unchanged == 1)
            #expect(try await importer.importFile(fewer, as: .users).written == 1)
        }
        #expect(try await store.withReader { try await $0.user(id: "u1") }?.reader.devices == [Device(token: "t2", platform: .web)])
        let skipped = try await store.withImporter { try await $0.importFile(reads, as: .reads).skipped }
        #expect(skipped == ["unknown_article": 1, "unknown_user": 1])
    }

    /// The fixtures imported into both stores read back identically, whichever way the run reads.
    @Test func historyReadsTheSameOnBothBackends() async throws {
        var answers: [Backend: [String]] = [:]
        for backend in Backend.allCases {
            let store = try await StoreHarness(backend, chunkSize: 4)
            try await store.withImporter { importer in
                for kind in ImportKind.allCases {
                    _ = try await importer.importFile(FixtureDatabase.directory.appendingPathComponent("\(kind.rawValue).jsonl").path, as: kind)
                }
            }
            _ = try await store.withLedger { try await $0.begin(week: Self.week, now: 0) }
            answers[backend] = try await store.withReader { reader in
            var lines: [String] = []
            var cursor: Int64 = 0
            var batches = 0
            let articleIDs = try await reader.articles(publishedFrom: 0, until: 4_000_000_000).map(\.id) + ["no-such-article"]
            while let batch = try await reader.nextBatch(week: Self.week, after: cursor, limit: 4) {
                batches += 1
                cursor = batch.position
                let reads = try await reader.reads(of: batch.users, since: batch.users.map { _ in 0 })
                // Reads of any article before an instant inside the fixtures' reads, by article.
                let earlier = try await reader.earlierReads(of: batch.users, among: articleIDs, before: 1_794_900_000)
                for (index, (user, events)) in zip(batch.users, reads).enumerated() {
                    lines.append("\(user.reader) \(events.map { "\($0.articleID)@\($0.readAt)+\($0.seconds) \($0.topics) \($0.language ?? "-")" })")
                    let expected = Set(events.filter { $0.readAt < 1_794_900_000 }.map(\.articleID))
                    #expect(Set(earlier[index]) == expected, "\(backend) \(user.reader.id)")
                    lines.append("earlier \(user.reader.id): \(Set(earlier[index]).sorted())")
                }
                if backend == .postgres {
                    // The claimed chunk is finished here as the run would, so the next claim moves on.
                    _ = try await store.withLedger {
                        try await $0.commit(week: Self.week, through: batch.position, messages: [], counters: RunCounters(), now: 0)
                    }
                }
            }
            #expect(batches >= 2, "\(backend): the fixtures span more than one batch of 4")
            // SQLite batches users in import order, PostgreSQL in id order: compare them as a set.
            lines.sort()
            lines.append("articles: \(try await reader.articles(publishedFrom: 0, until: 4_000_000_000).map { "\($0)" })")
            lines.append("prefix: \(try await reader.users(idPrefix: "u", limit: 3).map(\.reader.id))")
            // Every user once, two at a time by id, in byte order (how a template comparison reads them).
            var paged: [String] = [], after = ""
            while true {
                let page = try await reader.users(afterID: after, limit: 2)
                guard let last = page.last else { break }
                paged += page.map(\.reader.id)
                after = last.reader.id
            }
            #expect(paged == paged.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }, "\(backend)")
            #expect(paged.count == Set(paged).count && paged.count > 4, "\(backend)")
            lines.append("paged: \(paged)")
            lines.append("reads: \(try await reader.hasReads(from: 1_794_700_000, until: 1_795_300_000))")
            return lines
            }
        }
        #expect(answers[.sqlite] == answers[.postgres])
        #expect((answers[.sqlite]?.count ?? 0) > 6)
    }
}
