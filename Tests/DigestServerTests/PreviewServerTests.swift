import DigestCore
import DigestPreview
import DigestRun
import DigestSQLite
import DigestServer
import DigestStore
import DigestTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// The preview server in-process (router) and live on port 0.
@Suite struct PreviewServerTests {
    static let pool = PreviewPool(threads: 2)

    static func server(
        _ database: SQLiteDatabase, templates: URL = DigestBinary.templates, token: String? = nil
    ) -> PreviewServer<SQLiteDatabase> {
        let configuration = PreviewCatalog<SQLiteDatabase>.Configuration(templatesDirectory: templates) { week in
            BatchComposer.Configuration(week: week)
        }
        let catalog = PreviewCatalog(database: database, configuration: configuration, pool: pool, now: { FixtureDatabase.now })
        // Stopping a live server by cancelling it logs at error level; keep test output quiet.
        var logger = Logger(label: "digest.serve.test")
        logger.logLevel = .critical
        return PreviewServer(catalog: catalog, configuration: .init(host: "127.0.0.1", port: 0, bearerToken: token), logger: logger)
    }

    static func json(_ buffer: ByteBuffer) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(buffer.getBytes(at: buffer.readerIndex, length: buffer.readableBytes) ?? []))
    }

    @Test func pageSearchAndPreviewsOfEverySurface() async throws {
        let dir = try TemporaryDirectory()
        let app = Application(router: Self.server(try await FixtureDatabase.make(in: dir)).router())
        try await app.test(.router) { client in
            try await client.execute(uri: "/", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/html") == true)
                #expect(String(buffer: response.body).contains("digest previews"))
            }
            try await client.execute(uri: "/api/users?q=u-", method: .get) { response in
                #expect(response.status == .ok)
                let users = try #require(try Self.json(response.body) as? [[String: Any]])
                #expect(users.map { $0["id"] as? String } == ["u-mars", "u-nodev", "u-out", "u-pl", "u-quiet", "u-zh"])
            }
            let surfaces = try await client.execute(uri: "/api/preview?user=u-pl&week=2026-W46", method: .get) { response in
                #expect(response.status == .ok)
                let page = try #require(try Self.json(response.body) as? [String: Any])
                #expect(page["source"] as? String == "computed")
                #expect(page["week"] as? String == "2026-W46")
                #expect((page["weeks"] as? [String])?.first == "2026-W46")
                let budgets = try #require(page["budgets"] as? [[String: Any]])
                #expect(budgets.map { $0["platform"] as? String } == ["android", "ios"])
                #expect(budgets.allSatisfy { ($0["bytes"] as? Int ?? 0) > 100 && $0["budget"] as? Int == 3800 })
                let surfaces = try #require(page["surfaces"] as? [[String: Any]])
                #expect(surfaces.count == 4)
                return surfaces.compactMap { $0["image"] as? String }
            }
            for image in surfaces {
                try await client.execute(uri: "/" + image, method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType] == "image/png")
                    let bytes = response.body.getBytes(at: response.body.readerIndex, length: response.body.readableBytes) ?? []
                    #expect(PixelImage(png: bytes) != nil)
                }
            }
        }
    }

    /// A reader forgotten while the page runs (`digest readers forget`): their routes answer 404,
    /// the search no longer lists them and the PNGs cached for them are no longer served.
    @Test func aForgottenReaderIsGoneFromThePage() async throws {
        let dir = try TemporaryDirectory()
        let database = try await FixtureDatabase.make(in: dir)
        let app = Application(router: Self.server(database).router())
        try await app.test(.router) { client in
            let images = try await client.execute(uri: "/api/preview?user=u-pl&week=2026-W46", method: .get) { response in
                #expect(response.status == .ok)
                let page = try #require(try Self.json(response.body) as? [String: Any])
                return try #require(page["surfaces"] as? [[String: Any]]).compactMap { $0["image"] as? String }
            }
            #expect(!images.isEmpty)
            for image in images {
                try await client.execute(uri: "/" + image, method: .get) { #expect($0.status == .ok) }
            }
            let outcome = try await database.forgetReaders(["u-pl"], dryRun: false)
            #expect(outcome.readers == 1)
            for image in images {
                try await client.execute(uri: "/" + image, method: .get) { #expect($0.status == .notFound, "\(image)") }
            }
            try await client.execute(uri: "/api/preview?user=u-pl&week=2026-W46", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/api/users?q=u-", method: .get) { response in
                let users = try #require(try Self.json(response.body) as? [[String: Any]])
                #expect(!users.contains { $0["id"] as? String == "u-pl" } && users.count == 5)
            }
        }
    }

    @Test func unknownUsersAre404MalformedRequestsAre400AndTheServerStaysUp() async throws {
        let dir = try TemporaryDirectory()
        let app = Application(router: Self.server(try await FixtureDatabase.make(in: dir)).router())
        try await app.test(.router) { client in
            let cases: [(String, HTTPResponse.Status)] = [
                ("/api/preview?user=nobody&week=2026-W46", .notFound),
                ("/api/preview", .badRequest),
                ("/api/preview?user=", .badRequest),
                ("/api/preview?user=u-pl&week=2026-W99", .badRequest),
                ("/api/preview?user=u-pl&week=yesterday", .badRequest),
                ("/api/preview?user=u-pl&source=elsewhere", .badRequest),
                ("/api/preview?user=u%01x", .badRequest),
                ("/api/preview?user=" + String(repeating: "x", count: 300), .badRequest),
                ("/png/0000-android-collapsed.png", .notFound),
                ("/png/whatever.txt", .badRequest),
                ("/nowhere", .notFound),
            ]
            for (uri, status) in cases {
                try await client.execute(uri: uri, method: .get) { response in
                    #expect(response.status == status, "\(uri)")
                }
            }
            // A skipped user answers with the reason, not an error.
            try await client.execute(uri: "/api/preview?user=u-out&week=2026-W46", method: .get) { response in
                #expect(response.status == .ok)
                let page = try #require(try Self.json(response.body) as? [String: Any])
                #expect(page["skipped"] as? String == "opted_out")
            }
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
    }

    /// With the week run, the page shows what the outbox holds (no source asked for), the reader's
    /// rows with their ids and states, and the week's figures from the collected events.
    @Test func theOutboxMessageAndTheWeeksFiguresWhenTheRunHasBeen() async throws {
        let dir = try TemporaryDirectory()
        let database = try await FixtureDatabase.make(in: dir)
        let run = try await DigestBinary.run(["run", "--db", database.path, "--week", FixtureDatabase.week])
        #expect(run.status == 0, "\(run.stderr)")
        let rows = try await database.outboxRows(week: FixtureDatabase.week, userID: "u-pl")
        #expect(rows.map(\.platform) == [.android, .ios])
        let android = try #require(rows.first)
        try database.connect().execute("UPDATE digest_outbox SET state = 'sent' WHERE user_id = 'u-pl'")
        // The run wrote its rows at the wall clock's now: the tap comes after.
        let tapped = Int64(Date().timeIntervalSince1970) + 5
        let recorded = try await database.withEventSink { sink in
            try await sink.record(
                [IndexedEvent(index: 0, event: AppEvent(messageID: try #require(android.messageID), type: .opened, at: tapped))],
                now: tapped)
        }
        #expect(recorded.accepted == 1)
        let app = Application(router: Self.server(database).router())
        try await app.test(.router) { client in
            try await client.execute(uri: "/api/preview?user=u-pl&week=2026-W46", method: .get) { response in
                #expect(response.status == .ok)
                let page = try #require(try Self.json(response.body) as? [String: Any])
                #expect(page["source"] as? String == "outbox")
                let outbox = try #require(page["outbox"] as? [[String: Any]])
                #expect(outbox.map { $0["state"] as? String } == ["sent", "sent"])
                #expect(outbox.first?["messageID"] as? String == android.messageID)
                let report = try #require(page["report"] as? [String: Any])
                let figures = try #require(report["rows"] as? [[String: Any]])
                #expect(figures.map { [$0["platform"] as? String, $0["locale"] as? String] } == [["android", "pl"], ["ios", "pl"]])
                #expect(figures.map { $0["sent"] as? Int } == [1, 1])
                #expect(figures.map { $0["opened"] as? Int } == [1, 0])
                // The chart the page shows is `digest report --chart`'s: one open of two sent.
                let chart = try #require(page["chart"] as? String)
                #expect(chart.hasPrefix("<svg ") && chart.contains("50.0% (9.5–90.5%), 1 of 2"), "\(chart)")
            }
            // Asked for, the composed message is still there, with the outbox rows beside it.
            try await client.execute(uri: "/api/preview?user=u-pl&week=2026-W46&source=computed", method: .get) { response in
                let page = try #require(try Self.json(response.body) as? [String: Any])
                #expect(page["source"] as? String == "computed")
                #expect((page["outbox"] as? [[String: Any]])?.count == 2)
            }
        }
    }

    @Test func aTemplateEditShowsOnTheNextRequest() async throws {
        let dir = try TemporaryDirectory()
        let templates = dir.url.appendingPathComponent("Templates")
        try FileManager.default.copyItem(at: DigestBinary.templates, to: templates)
        let app = Application(router: Self.server(try await FixtureDatabase.make(in: dir), templates: templates).router())
        try await app.test(.router) { client in
            func titles() async throws -> [String] {
                try await client.execute(uri: "/api/preview?user=u-pl&week=2026-W46", method: .get) { response in
                    let page = try #require(try Self.json(response.body) as? [String: Any])
                    let surfaces = try #require(page["surfaces"] as? [[String: Any]])
                    return surfaces.compactMap { surface in
                        (surface["texts"] as? [[String: Any]])?.first { $0["role"] as? String == "title" }
                            .flatMap { ($0["lines"] as? [String])?.joined() }
                    }
                }
            }
            let before = try await titles()
            #expect(!before.isEmpty)
            #expect(!before.contains { $0.contains("EDITED") })
            let file = templates.appendingPathComponent("pl/title.mustache")
            try ("EDITED " + (try String(contentsOf: file, encoding: .utf8))).write(to: file, atomically: true, encoding: .utf8)
            let after = try await titles()
            #expect(after.allSatisfy { $0.hasPrefix("EDITED") }, "\(after)")
        }
    }

    @Test func aBearerTokenIsRequiredWhenSet() async throws {
        let dir = try TemporaryDirectory()
        let app = Application(router: Self.server(try await FixtureDatabase.make(in: dir), token: "s3cret").router())
        try await app.test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/healthz", method: .get, headers: [.authorization: "Bearer wrong"]) {
                #expect($0.status == .unauthorized)
            }
            try await client.execute(uri: "/healthz", method: .get, headers: [.authorization: "Bearer s3cret"]) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/api/users?q=u&token=s3cret", method: .get) { #expect($0.status == .ok) }
        }
        #expect(PreviewServer<SQLiteDatabase>.Configuration(host: "0.0.0.0").isLoopback == false)
        #expect(PreviewServer<SQLiteDatabase>.Configuration(host: "127.0.0.1").isLoopback)
    }

    @Test func liveOnPortZero() async throws {
        let dir = try TemporaryDirectory()
        let server = Self.server(try await FixtureDatabase.make(in: dir))
        try await LiveServer.with(server) { port in
            let (data, response) = try await LiveServer.get("http://127.0.0.1:\(port)/api/preview?user=u-zh&week=2026-W46")
            #expect(response == 200)
            let page = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let surfaces = try #require(page["surfaces"] as? [[String: Any]])
            #expect(surfaces.map { $0["platform"] as? String } == ["web", "web"])
            for surface in surfaces {
                let (png, status) = try await LiveServer.get("http://127.0.0.1:\(port)/\(surface["image"] as! String)")
                #expect(status == 200)
                #expect(PixelImage(png: Array(png)) != nil)
            }
            let (_, missing) = try await LiveServer.get("http://127.0.0.1:\(port)/api/preview?user=nobody")
            #expect(missing == 404)
        }
    }
}
