import DigestCore
import DigestPreview
import DigestSQLite
import DigestStore
import DigestServer
import DigestTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// `digest preview --compare`: the real binary on the demo's SQLite file (200 readers in four
/// locales, no images, week 2026-W46), its compare.json read back exactly.
@Suite struct TemplateComparisonTests {
    /// One demo for the suite: its directory (kept alive here) and the database path.
    static let demo = Task { () throws -> (TemporaryDirectory, String) in
        let dir = try TemporaryDirectory()
        let demo = try await DigestBinary.run([
            "demo", "--out", dir.path("demo"), "--users", "200", "--images", "0", "--week", "2026-W46", "--as-of",
            "2026-11-16T12:00:00Z",
        ])
        guard demo.status == 0 else { throw DemoFailed(stderr: demo.stderr) }
        return (dir, dir.path("demo/digest.sqlite"))
    }

    struct DemoFailed: Error { var stderr: String }

    /// A copy of the shipped templates with `file`'s `old` replaced by `new`.
    static func templates(in dir: TemporaryDirectory, _ file: String, replacing old: String, with new: String) throws -> String {
        let copy = dir.url.appendingPathComponent("Templates")
        try FileManager.default.copyItem(at: DigestBinary.templates, to: copy)
        let url = copy.appendingPathComponent(file)
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.contains(old))
        try text.replacingOccurrences(of: old, with: new).write(to: url, atomically: true, encoding: .utf8)
        return copy.path
    }

    /// Runs the comparison and reads compare.json.
    static func compare(_ db: String, new: String, out: String, _ extra: [String] = []) async throws -> [String: Any] {
        let run = try await DigestBinary.run(
            ["preview", "--db", db, "--week", "2026-W46", "--compare", DigestBinary.templates.path, "--templates", new, "--out", out, "--scale", "1"]
                + extra)
        #expect(run.status == 0, "\(run.stderr)")
        let data = try Data(contentsOf: URL(fileURLWithPath: out).appendingPathComponent("compare.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func entries(_ json: [String: Any]) -> [[String: Any]] { json["entries"] as? [[String: Any]] ?? [] }
    static func totals(_ json: [String: Any]) -> [String: Any] { json["totals"] as? [String: Any] ?? [:] }

    @Test func aOneWordChangeInThePolishTitleChangesExactlyThePolishMessagesThatUseIt() async throws {
        let (_, db) = try await Self.demo.value
        let dir = try TemporaryDirectory()
        let new = try Self.templates(in: dir, "pl/title.mustache", replacing: "Twój tydzień", with: "Wasz tydzień")
        let json = try await Self.compare(db, new: new, out: dir.path("compare"))

        // What the demo's run enqueued with the shipped templates, one message per reader and platform.
        let rows = try await SQLiteDatabase.sqlite(path: db).peek(limit: 100_000, state: nil)
        var messages: [String: OutboxRow] = [:]
        for row in rows { messages["\(row.userID) \(row.platform.rawValue)"] = messages["\(row.userID) \(row.platform.rawValue)"] ?? row }
        let polish = messages.filter { $0.value.locale == "pl" }
        let titled = Set(polish.filter { $0.value.message.contains("Twój tydzień") }.keys)
        let reengaged = Set(polish.filter { $0.value.message.contains("Czekają na Ciebie") }.keys)
        #expect(!titled.isEmpty)
        #expect(!reengaged.isEmpty, "the demo has Polish re-engagement messages, which have a title template of their own")

        let entries = Self.entries(json)
        let changed = Set(entries.map { "\($0["user"] as? String ?? "") \($0["platform"] as? String ?? "")" })
        #expect(changed == titled)
        #expect(changed.isDisjoint(with: reengaged))
        #expect(entries.allSatisfy { $0["locale"] as? String == "pl" })
        // "Wasz" is wider than "Twój": a title may now run past a surface's lines, the one other change
        // the edit can make (counted as newly cut there).
        let cut = entries.filter { $0["changes"] as? [String] != ["text"] }
        #expect(cut.allSatisfy { $0["changes"] as? [String] == ["text", "newly_cut"] })
        #expect(cut.allSatisfy { ($0["newlyCut"] as? [String])?.allSatisfy { $0.hasSuffix(" title") } == true })
        let totals = Self.totals(json)
        #expect(totals["newlyCut"] as? Int == cut.count)
        #expect(totals["readers"] as? Int == 200)
        #expect(totals["messages"] as? Int == messages.count)
        #expect(totals["changed"] as? Int == titled.count)
        #expect(totals["unchanged"] as? Int == messages.count - titled.count)
        for key in ["variantSwitches", "noLongerCut", "newlyOverBudget", "backWithinBudget", "rulesChanged", "failed", "missingUsers"] {
            #expect(totals[key] as? Int == 0, "\(key)")
        }
        let groups = try #require(totals["changedBy"] as? [[String: Any]])
        #expect(groups.allSatisfy { $0["locale"] as? String == "pl" })
        #expect(groups.reduce(0) { $0 + ($1["messages"] as? Int ?? 0) } == titled.count)

        // The PNGs are the renderer's: the title's pixels differ, and the title line is marked changed.
        let entry = try #require(entries.first { $0["platform"] as? String == "android" })
        let surfaces = try #require(entry["surfaces"] as? [[String: Any]])
        #expect(surfaces.map { $0["state"] as? String } == ["collapsed", "expanded"])
        for surface in surfaces {
            #expect((surface["changedRoles"] as? [String])?.contains("title") == true)
            let images = try ["old", "new"].map { side in
                let drawing = try #require(surface[side] as? [String: Any])
                let file = dir.url.appendingPathComponent("compare").appendingPathComponent(try #require(drawing["image"] as? String))
                return try #require(PixelImage(png: Array(try Data(contentsOf: file))))
            }
            #expect(images[0].width == images[1].width && images[0].height == images[1].height)
            #expect(images[0].pixels != images[1].pixels)
        }
        let html = try String(contentsOfFile: dir.path("compare/index.html"), encoding: .utf8)
        #expect(html.contains("<li class=\"changed\">title: Wasz tydzień"))
        #expect(html.contains("<li class=\"changed\">title: Twój tydzień"))
        #expect(!html.contains("class=\"changed\">body:"))
        #expect(!html.contains("class=\"changed\">action:"), "each action is set against the same action of the other side")
    }

    @Test func aChangedButtonTitleIsAChangedLineOfTheExpandedSurfaces() async throws {
        let (_, db) = try await Self.demo.value
        let dir = try TemporaryDirectory()
        let new = try Self.templates(in: dir, "pl/strings.json", replacing: "\"later\": \"Później\"", with: "\"later\": \"Potem\"")
        let json = try await Self.compare(db, new: new, out: dir.path("compare"))

        // The demo's run has the default buttons (`open,later`): Android's data.actions and the web
        // notification's actions carry "Później"; an iOS message carries only its category, whose titles
        // are the app's, so no iOS message changes.
        let rows = try await SQLiteDatabase.sqlite(path: db).peek(limit: 100_000, state: nil)
        var messages: [String: OutboxRow] = [:]
        for row in rows { messages["\(row.userID) \(row.platform.rawValue)"] = messages["\(row.userID) \(row.platform.rawValue)"] ?? row }
        let polish = messages.filter { $0.value.locale == "pl" }
        let titled = Set(polish.filter { $0.value.message.contains("Później") }.keys)
        #expect(polish.values.filter { $0.platform == .ios }.allSatisfy { !$0.message.contains("Później") })
        #expect(titled.contains { $0.hasSuffix(" android") })

        let entries = Self.entries(json)
        let changed = Set(entries.map { "\($0["user"] as? String ?? "") \($0["platform"] as? String ?? "")" })
        #expect(changed == titled)
        #expect(entries.allSatisfy { $0["changes"] as? [String] == ["text"] })
        for entry in entries {
            let surfaces = try #require(entry["surfaces"] as? [[String: Any]])
            let roles = Dictionary(uniqueKeysWithValues: surfaces.map { ($0["state"] as? String ?? "", $0["changedRoles"] as? [String] ?? []) })
            // Buttons are drawn expanded only: there the button's line changed, and nothing else.
            #expect(roles == ["collapsed": [], "expanded": ["action"]], "\(entry["user"] ?? "") \(entry["platform"] ?? "")")
        }
        let html = try String(contentsOfFile: dir.path("compare/index.html"), encoding: .utf8)
        #expect(html.contains("<li class=\"changed\">action: Potem</li>"))
        #expect(html.contains("<li class=\"changed\">action: Później</li>"))
        #expect(!html.contains("<li class=\"changed\">action: Czytaj</li>"), "an unchanged button is not marked")
        #expect(!html.contains("class=\"changed\">title:") && !html.contains("class=\"changed\">body:"))
        if titled.contains(where: { $0.hasSuffix(" web") }) {
            #expect(html.contains("<li class=\"changed\">action: POTEM</li>"))
        }
    }

    @Test func aLongerHeaderIsCountedAsNewlyCutWhereItIs() async throws {
        let (_, db) = try await Self.demo.value
        let dir = try TemporaryDirectory()
        let new = try Self.templates(
            in: dir, "en/header.mustache", replacing: "{{days}} active",
            with: "Here is how your reading went this week, day by day and topic by topic: {{days}} active")
        let json = try await Self.compare(db, new: new, out: dir.path("compare"))
        let entries = Self.entries(json)
        #expect(!entries.isEmpty)
        #expect(entries.allSatisfy { $0["locale"] as? String == "en" && ($0["new"] as? [String: Any])?["variant"] as? String == "BigText" })
        let cut = entries.filter { ($0["changes"] as? [String])?.contains("newly_cut") == true }
        #expect(!cut.isEmpty)
        #expect(Self.totals(json)["newlyCut"] as? Int == cut.count)
        for entry in cut {
            // A text rule's cut is the rule newly fired, with its limit.
            if (entry["newlyCut"] as? [String])?.contains("header.truncated") == true {
                #expect((entry["rulesAdded"] as? [String])?.contains("header.truncated:120") == true)
            }
            let platform = try #require(entry["platform"] as? String)
            let surfaces = try #require(entry["surfaces"] as? [[String: Any]])
            for label in try #require(entry["newlyCut"] as? [String]) where label.hasPrefix(platform + "-") {
                // "<platform>-<state> <role>": the new drawing of that surface ends in "…", the old one did not.
                let parts = label.dropFirst(platform.count + 1).split(separator: " ")
                let surface = try #require(surfaces.first { $0["state"] as? String == String(parts[0]) })
                func text(_ side: String) -> [String: Any]? {
                    ((surface[side] as? [String: Any])?["texts"] as? [[String: Any]])?.first { $0["role"] as? String == String(parts[1]) }
                }
                #expect(text("new")?["ellipsized"] as? Bool == true)
                #expect(text("old")?["ellipsized"] as? Bool == false)
                #expect(((text("new")?["lines"] as? [String])?.last ?? "").hasSuffix("…"))
            }
        }
    }

    @Test func aSampleIsStableAndCoversEveryLocaleAndVariantUnknownIdsAndBadFoldersAreReported() async throws {
        let (_, db) = try await Self.demo.value
        let dir = try TemporaryDirectory()
        let new = try Self.templates(in: dir, "pl/title.mustache", replacing: "Twój tydzień", with: "Wasz tydzień")
        let first = try await Self.compare(db, new: new, out: dir.path("a"), ["--sample", "5"])
        let second = try await Self.compare(db, new: new, out: dir.path("b"), ["--sample", "5"])
        let sample = try #require(first["sample"] as? [String])
        #expect(sample == second["sample"] as? [String])
        #expect(Self.totals(first)["readers"] as? Int == sample.count)
        #expect(sample.count >= 5)
        // Every locale × variant the new folder gives messages in has a reader in the sample.
        let rows = try await SQLiteDatabase.sqlite(path: db).peek(limit: 100_000, state: nil)
        let classes = Set(rows.map { "\($0.locale ?? "") \($0.variant.rawValue)" })
        let sampled = Set(rows.filter { sample.contains($0.userID) }.map { "\($0.locale ?? "") \($0.variant.rawValue)" })
        #expect(sampled == classes)

        let ids = dir.url.appendingPathComponent("users.txt")
        try "u1\nnobody\n\nu2\n".write(to: ids, atomically: true, encoding: .utf8)
        let listed = try await Self.compare(db, new: DigestBinary.templates.path, out: dir.path("c"), ["--users", ids.path])
        #expect(Self.entries(listed).map { $0["user"] as? String } == ["nobody"])
        #expect(Self.entries(listed).first?["error"] as? String == "no user with this id")
        #expect(Self.totals(listed)["readers"] as? Int == 2)
        #expect(Self.totals(listed)["missingUsers"] as? Int == 1)
        #expect(Self.totals(listed)["changed"] as? Int == 0)

        let missing = try await DigestBinary.run([
            "preview", "--db", db, "--week", "2026-W46", "--compare", dir.path("no-such-folder"), "--out", dir.path("d"),
        ])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("the old templates (\(dir.path("no-such-folder")))"))
        let brokenDir = try TemporaryDirectory()
        let broken = try Self.templates(in: brokenDir, "ru/title.mustache", replacing: "{{", with: "{{#")
        let unparsable = try await DigestBinary.run([
            "preview", "--db", db, "--week", "2026-W46", "--compare", DigestBinary.templates.path, "--templates", broken,
            "--out", dir.path("e"),
        ])
        #expect(unparsable.status != 0)
        #expect(unparsable.stderr.contains("the new templates"))
        #expect(unparsable.stderr.contains("title.mustache"))
        let platform = try await DigestBinary.run([
            "preview", "--db", db, "--week", "2026-W46", "--compare", DigestBinary.templates.path, "--platform", "android", "--out", dir.path("f"),
        ])
        #expect(platform.status == 64 && platform.stderr.contains("--platform does not go with --compare"), "\(platform.stderr)")
    }

    /// The preview server on the fixtures comparing the shipped templates with a copy whose Polish
    /// title says "Wasz" for "Twój" (`serve --compare-templates`).
    static func comparingServer(in dir: TemporaryDirectory) async throws -> PreviewServer<SQLiteDatabase> {
        let old = try templates(in: dir, "pl/title.mustache", replacing: "Twój tydzień", with: "Wasz tydzień")
        var configuration = PreviewCatalog<SQLiteDatabase>.Configuration(templatesDirectory: DigestBinary.templates) { week in
            BatchComposer.Configuration(week: week)
        }
        configuration.scale = 1
        configuration.compareTemplatesDirectory = URL(fileURLWithPath: old)
        let catalog = PreviewCatalog(
            database: try await FixtureDatabase.make(in: dir), configuration: configuration, pool: PreviewServerTests.pool,
            now: { FixtureDatabase.now })
        return PreviewServer(catalog: catalog, configuration: .init(host: "127.0.0.1", port: 0))
    }

    @Test func thePageComparesTheReaderInView() async throws {
        let dir = try TemporaryDirectory()
        let app = Application(router: try await Self.comparingServer(in: dir).router())
        try await app.test(.router) { client in
            let images = try await client.execute(uri: "/api/compare?user=u-pl&week=2026-W46", method: .get) { response in
                #expect(response.status == .ok)
                let page = try #require(try PreviewServerTests.json(response.body) as? [String: Any])
                let totals = try #require(page["totals"] as? [String: Any])
                #expect(totals["readers"] as? Int == 1)
                #expect(totals["messages"] as? Int == 2)
                #expect(totals["changed"] as? Int == 2)
                let entries = try #require(page["entries"] as? [[String: Any]])
                #expect(entries.map { $0["platform"] as? String } == ["android", "ios"])
                #expect(entries.allSatisfy { $0["changes"] as? [String] == ["text"] })
                return entries.flatMap { entry in
                    (entry["surfaces"] as? [[String: Any]] ?? []).flatMap { surface in
                        ["old", "new"].compactMap { (surface[$0] as? [String: Any])?["image"] as? String }
                    }
                }
            }
            #expect(images.count == 8)
            for image in images {
                try await client.execute(uri: "/" + image, method: .get) { response in
                    #expect(response.status == .ok)
                    let bytes = response.body.getBytes(at: response.body.readerIndex, length: response.body.readableBytes) ?? []
                    #expect(PixelImage(png: bytes) != nil)
                }
            }
            // The Russian reader's messages do not change: counted, not drawn.
            try await client.execute(uri: "/api/compare?user=u-mars&week=2026-W46", method: .get) { response in
                let page = try #require(try PreviewServerTests.json(response.body) as? [String: Any])
                #expect((page["entries"] as? [Any])?.isEmpty == true)
                #expect((page["totals"] as? [String: Any])?["unchanged"] as? Int ?? 0 > 0)
            }
            try await client.execute(uri: "/api/compare?user=nobody&week=2026-W46", method: .get) { response in
                #expect(response.status == .notFound)
            }
            try await client.execute(uri: "/api/preview?user=u-pl&week=2026-W46", method: .get) { response in
                let page = try #require(try PreviewServerTests.json(response.body) as? [String: Any])
                #expect(page["compares"] as? Bool == true)
            }
        }
    }
}
