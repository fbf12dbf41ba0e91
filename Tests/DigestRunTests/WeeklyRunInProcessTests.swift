import DigestCore
import DigestRun
import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Testing
import DigestImport

/// The run as a library, with an in-memory attachment provider standing in for the image pipeline.
@Suite struct WeeklyRunInProcessTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    func database(in dir: TemporaryDirectory) async throws -> SQLiteDatabase {
        let database = SQLiteDatabase.sqlite(path: dir.path("digest.sqlite"))
        try await database.withImportSink { sink in
            let importer = HistoryImporter(sink: sink)
            for kind in ImportKind.allCases {
                _ = try await importer.importFile(Self.fixtures.appendingPathComponent("\(kind.rawValue).jsonl").path, as: kind)
            }
        }
        return database
    }

    @Test func renditionsMakeTheImageVariantAndEachImageIsAskedForPerUser() async throws {
        let dir = try TemporaryDirectory()
        let database = try await database(in: dir)
        let hero = Rendition(url: "https://cdn.example/h.jpg", mimeType: "image/jpeg", width: 1024, height: 512, byteCount: 80_000)
        let icon = Rendition(url: "https://cdn.example/i.png", mimeType: "image/png", width: 256, height: 256, byteCount: 20_000)
        let attachments = InMemoryAttachments(["https://img.example/a7.jpg": .ready(ImageRenditions(hero: hero, icon: icon))])
        let run = WeeklyRun(
            database: database, templates: try TemplateCatalog(directory: DigestBinary.templates),
            attachments: attachments, configuration: .init(week: try ISOWeek(parsing: "2026-W46")))
        let summary = try await run.run()
        #expect(summary.thisRun.variants["Image"] == 1)
        #expect(summary.thisRun.images["ready"] == 1)
        #expect(summary.thisRun.images["not in fixture"] == 1)

        let rows = try await database.peek(limit: 20, state: nil).filter { $0.userID == "u-pl" }
        #expect(rows.count == 2)
        for row in rows {
            #expect(row.variant == .image)
            let object = try JSONSerialization.jsonObject(with: Data(row.message.utf8)) as! [String: Any]
            let message = object["message"] as! [String: Any]
            if row.platform == .android {
                let data = (message["android"] as! [String: Any])["data"] as! [String: String]
                #expect(data["imageUrl"] == hero.url)
                #expect(data["iconUrl"] == icon.url)
                #expect(data["type"] == "Image")
                #expect(!data["body"]!.contains("\n"), "the image body is one line")
            } else {
                let apns = message["apns"] as! [String: Any]
                let aps = (apns["payload"] as! [String: Any])["aps"] as! [String: Any]
                #expect(aps["mutable-content"] as? Int == 1)
                #expect((apns["fcm_options"] as! [String: String])["image"] == hero.url)
            }
        }
    }

    @Test func sendAtNowMakesEveryMessageDueAtOnce() async throws {
        let dir = try TemporaryDirectory()
        let database = try await database(in: dir)
        var configuration = WeeklyRun<SQLiteDatabase>.Configuration(week: try ISOWeek(parsing: "2026-W46"))
        configuration.sendAt = .now
        let now = Date(timeIntervalSince1970: 1_795_500_000)
        let run = WeeklyRun(database: database, templates: try TemplateCatalog(directory: DigestBinary.templates), configuration: configuration)
        _ = try await run.run(now: now)
        let rows = try await database.peek(limit: 20, state: nil)
        #expect(rows.count == 5)
        #expect(rows.allSatisfy { $0.availableAt == 1_795_500_000 })
    }

    @Test func messageIDsIncreaseInTheOrderTheRowsAreInserted() async throws {
        let dir = try TemporaryDirectory()
        let database = try await database(in: dir)
        var configuration = WeeklyRun<SQLiteDatabase>.Configuration(week: try ISOWeek(parsing: "2026-W46"))
        configuration.batchSize = 2  // several batches, composed two at a time
        configuration.concurrency = 2
        let run = WeeklyRun(database: database, templates: try TemplateCatalog(directory: DigestBinary.templates), configuration: configuration)
        _ = try await run.run(now: Date(timeIntervalSince1970: 1_795_500_000))
        let rows = try SQLiteConnection(path: dir.path("digest.sqlite")).lines("SELECT message_id, message FROM digest_outbox ORDER BY id")
            .split(separator: "\n").map { $0.split(separator: "|", maxSplits: 1).map(String.init) }
        let ids = rows.map { $0[0] }
        #expect(ids.count == 5)
        #expect(ids == ids.sorted() && Set(ids).count == ids.count, "\(ids)")
        // Each leads with the run's instant and carries its batch: more than one batch here.
        #expect(ids.allSatisfy { $0.count == OutboxMessage.messageIDLength && $0.hasPrefix(String(1_795_500_000, radix: 16)) })
        #expect(Set(ids.map { $0.dropFirst(8).prefix(5) }).count > 1)
        #expect(rows.allSatisfy { $0[1].contains(#""message_id":"\#($0[0])""#) })
    }
}
