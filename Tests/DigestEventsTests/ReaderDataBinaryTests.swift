import DigestCore
import DigestImport
import DigestStore
import DigestTesting
import Foundation
import Testing

/// `digest readers export` and `digest readers forget` as the binary runs them, on a SQLite file:
/// output shapes, file names, exit statuses, and a forget killed between its batches.
@Suite struct ReaderDataBinaryTests {
    /// `count` readers `r0`, `r1`, … each with two devices, three reads and a sent message.
    static func store(readers count: Int, extra: [Reader] = []) async throws -> StoreHarness {
        let store = try await StoreHarness(.sqlite)
        let readers =
            (0..<count).map { n in
                Reader(
                    id: "r\(n)", locale: "en", timeZone: "Europe/Warsaw", optedOut: false,
                    devices: [Device(token: "tok-a-r\(n)", platform: .android), Device(token: "tok-b-r\(n)", platform: .ios)])
            } + extra
        let articles = (0..<3).map {
            Article(id: "a\($0)", title: "Title \($0)", url: "https://example.com/\($0)", imageURL: nil, topics: ["t"], publishedAt: 1_794_000_000, readingMinutes: 3)
        }
        _ = try await store.withImporter { importer in
            _ = try await importer.sink.write(.articles(articles))
            for start in stride(from: 0, to: readers.count, by: 1_000) {
                let slice = Array(readers[start..<min(start + 1_000, readers.count)])
                _ = try await importer.sink.write(.users(slice))
                let reads = slice.flatMap { reader in
                    (0..<3).map { ImportedRead(userID: reader.id, articleID: "a\($0)", readAt: 1_794_100_000 + Int64($0) * 3600, seconds: 60) }
                }
                _ = try await importer.sink.write(.reads(reads))
            }
        }
        try await store.write(readers.map { FixtureMessage(user: $0.id) })
        return store
    }

    @Test func exportWritesALineOrAFileAReaderAndNamesTheUnknown() async throws {
        let odd = Reader(id: "a/b c", locale: "en", timeZone: "UTC", optedOut: false, devices: [Device(token: "tok-odd", platform: .android)])
        let store = try await Self.store(readers: 2, extra: [odd])
        let db = store.directory.path("store.sqlite")

        let lines = try await DigestBinary.run(["readers", "export", "--db", db, "r0", "nobody", "r1"])
        #expect(lines.status == 1)
        #expect(lines.stderr.contains("no reader 'nobody' in \(db)"), "\(lines.stderr)")
        let objects = lines.stdout.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == 2)
        #expect(objects.map { ($0?["reader"] as? [String: Any])?["id"] as? String } == ["r0", "r1"])
        let first = try #require(objects[0])
        #expect((first["devices"] as? [[String: Any]])?.compactMap { $0["token"] as? String }.sorted() == ["tok-a-r0", "tok-b-r0"])
        #expect((first["reads"] as? [[String: Any]])?.count == 3)
        #expect((first["messages"] as? [[String: Any]])?.first?["state"] as? String == "sent")
        // The sections in the documented order.
        let keys = lines.stdout.split(separator: "\n")[0].components(separatedBy: "\":").compactMap { $0.split(separator: "\"").last.map(String.init) }
        let sections = ["reader", "preferences", "preference_changes", "devices", "reads", "messages", "picks", "events", "test_sends"]
        #expect(keys.filter { sections.contains($0) }.prefix(sections.count).elementsEqual(sections), "\(keys)")

        let out = store.directory.path("export")
        let files = try await DigestBinary.run(["readers", "export", "--db", db, "a/b c", "r1", "--out", out])
        #expect(files.status == 0, "\(files.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == ["a%2Fb%20c.json", "r1.json"])
        let odds = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/a%2Fb%20c.json"))) as? [String: Any])
        #expect((odds["reader"] as? [String: Any])?["id"] as? String == "a/b c")
    }

    @Test func forgetCountsRemovesAndListsTheUnknown() async throws {
        let store = try await Self.store(readers: 3)
        let db = store.directory.path("store.sqlite")
        let ids = try store.directory.write("ids.txt", lines: ["r0", "", "  r2  ", "nobody"])

        let dry = try await DigestBinary.run(["readers", "forget", "--db", db, "--file", ids, "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        let counted = try #require(try JSONSerialization.jsonObject(with: Data(dry.stdout.utf8)) as? [String: Any])
        #expect(counted["readers"] as? Int == 2 && counted["unknown"] as? [String] == ["nobody"])
        let removed = try #require(counted["removed"] as? [String: Int])
        #expect(removed["users"] == 2 && removed["devices"] == 4 && removed["reads"] == 6 && removed["digest_outbox"] == 2, "\(removed)")
        #expect(try store.sql("SELECT count(*) FROM users") == "3")

        let done = try await DigestBinary.run(["readers", "forget", "--db", db, "--file", ids, "--json"])
        #expect(done.status == 0, "\(done.stderr)")
        let forgotten = try #require(try JSONSerialization.jsonObject(with: Data(done.stdout.utf8)) as? [String: Any])
        #expect(forgotten["removed"] as? [String: Int] == removed)
        #expect(try store.sql("SELECT group_concat(id) FROM users") == "r1")
        #expect(try store.sql("SELECT count(*) FROM digest_outbox WHERE user_id <> 'r1'") == "0")
        // The store closed and its -wal emptied by the checkpoint.
        let wal = (try? FileManager.default.attributesOfItem(atPath: db + "-wal")[.size] as? Int) ?? 0
        #expect(wal == 0)

        let text = try await DigestBinary.run(["readers", "forget", "--db", db, "r1"])
        #expect(text.status == 0 && text.stdout.hasPrefix("forgot 1 reader\n"), "\(text.stdout)")
        #expect(try await DigestBinary.run(["readers", "forget", "--db", db]).status == 64)
        #expect(try await DigestBinary.run(["readers", "forget", "--db", db, "r1", "--file", ids]).status == 64)
    }

    /// A forget killed after its first batch: every reader is either whole or gone, none in part.
    @Test func aForgetKilledBetweenBatchesLeavesWholeReaders() async throws {
        let count = 6_000
        let store = try await Self.store(readers: count)
        let db = store.directory.path("store.sqlite")
        let ids = try store.directory.write("ids.txt", lines: (0..<count).map { "r\($0)" })
        let killed = try await DigestBinary.runAndKill(
            ["readers", "forget", "--db", db, "--file", ids], afterLines: 1, containing: "forgot ")
        #expect(killed, "the forget ended before it could be killed")
        let tables = ["users": "id", "digest_outbox": "user_id"]
        var present: [String: Set<String>] = [:]
        for (table, column) in tables {
            let ids = try store.sql("SELECT group_concat(\(column), ' ') FROM (SELECT DISTINCT \(column) FROM \(table))")
            present[table] = Set(ids.split(separator: " ").map(String.init))
        }
        let users = present["users"] ?? []
        #expect(users.count < count && users.count > 0, "\(users.count) readers left")
        #expect(present["digest_outbox"] == users)
        let devices = try store.sql("SELECT count(*) FROM devices"), reads = try store.sql("SELECT count(*) FROM reads")
        #expect(devices == "\(users.count * 2)" && reads == "\(users.count * 3)", "devices \(devices), reads \(reads) for \(users.count) readers")
        let orphans = try store.sql("SELECT count(*) FROM devices d LEFT JOIN users u ON u.pk = d.user_pk WHERE u.pk IS NULL")
        #expect(orphans == "0")
    }
}
