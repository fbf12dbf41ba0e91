import DigestCore
import DigestSQLite
import DigestTesting
import Foundation
import Testing

/// `make demo` shows what devices get: its previews draw the renditions the run made, never a
/// placeholder for a picture that exists, and it prints a sample message of every locale.
@Suite struct DemoPreviewTests {
    @Test func demoPreviewsDrawTheRunsOwnPictures() async throws {
        let dir = try TemporaryDirectory()
        let demo = try await DigestBinary.run(["demo", "--out", dir.path("demo"), "--users", "200", "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"])
        #expect(demo.status == 0, "\(demo.stderr)")
        let previews = dir.url.appendingPathComponent("demo/previews")
        var imagePreviews = 0
        for user in try FileManager.default.contentsOfDirectory(atPath: previews.path) {
            let data = try Data(contentsOf: previews.appendingPathComponent("\(user)/preview.json"))
            let sidecar = try JSONSerialization.jsonObject(with: data) as! [String: Any]
            guard sidecar["variant"] as? String == "Image" else { continue }
            for preview in sidecar["previews"] as! [[String: Any]] {
                imagePreviews += 1
                let notes = preview["notes"] as? [String] ?? []
                #expect(!notes.contains { $0.contains("image not readable") }, "\(user): \(notes)")
            }
        }
        #expect(imagePreviews > 0, "the demo previews at least one Image message")
    }

    /// One line per locale folder of the templates: the title and body of the first message (outbox
    /// order) of a reader whose locale resolves to it, or that there is none (`de`, which no demo
    /// reader has; `fr-FR` readers fall back to English and are not samples of `en`).
    @Test func demoPrintsASampleMessagePerLocale() async throws {
        let dir = try TemporaryDirectory()
        let templates = dir.url.appendingPathComponent("templates")
        try FileManager.default.copyItem(at: DigestBinary.templates, to: templates)
        try FileManager.default.copyItem(at: templates.appendingPathComponent("en"), to: templates.appendingPathComponent("de"))
        let demo = try await DigestBinary.run([
            "demo", "--out", dir.path("demo"), "--users", "200", "--images", "0", "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z",
            "--templates", templates.path,
        ])
        #expect(demo.status == 0, "\(demo.stderr)")
        let lines = demo.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let header = try #require(lines.firstIndex { $0.hasPrefix("locales:") }, "\(demo.stdout)")
        let printed = Array(lines[(header + 1)...].prefix { $0.hasPrefix("  ") })

        // The expected lines, from the outbox and the users file.
        let catalog = try TemplateCatalog(directory: templates)
        var localeOf: [String: String] = [:]
        let users = try String(contentsOf: dir.url.appendingPathComponent("demo/data/users.jsonl"), encoding: .utf8)
        for line in users.split(separator: "\n") {
            let user = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let templates = catalog.localized(for: try #require(user["locale"] as? String))
            if !templates.fellBackToRoot { localeOf[try #require(user["id"] as? String)] = templates.resolved }
        }
        // A locale's sample is its first message whose picks are all in its language, else its first.
        var languageOf: [String: String] = [:]
        let articles = try String(contentsOf: dir.url.appendingPathComponent("demo/data/articles.jsonl"), encoding: .utf8)
        for line in articles.split(separator: "\n") {
            let article = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            if let language = article["language"] as? String { languageOf[article["id"] as! String] = LanguageTag.primary(language) }
        }
        let connection = try SQLiteConnection(path: dir.path("demo/digest.sqlite"))
        let statement = try connection.statement("SELECT user_id, message, report FROM digest_outbox ORDER BY id")
        var expected: [String: String] = [:]
        var firsts: [String: String] = [:]
        while try statement.step() {
            guard let locale = localeOf[statement.string(0)], expected[locale] == nil else { continue }
            let report = try #require(try JSONSerialization.jsonObject(with: Data(statement.string(2).utf8)) as? [String: Any])
            let picks = report["picks"] as? [String] ?? []
            let oneLanguage = picks.allSatisfy { languageOf[$0] == nil || languageOf[$0] == LanguageTag.primary(locale) }
            let json = try JSONSerialization.jsonObject(with: Data(statement.string(1).utf8))
            // An FCM v1 body, or a direct APNs payload.
            let object = try #require(json as? [String: Any])
            let message = object["message"] as? [String: Any] ?? ["apns": ["payload": object]]
            let texts: [String: Any]? =
                ((message["android"] as? [String: Any])?["data"] as? [String: Any])
                ?? (((message["apns"] as? [String: Any])?["payload"] as? [String: Any])?["aps"] as? [String: Any])?["alert"] as? [String: Any]
                ?? (message["webpush"] as? [String: Any])?["notification"] as? [String: Any]
            let title = try #require(texts?["title"] as? String)
            let body = try #require(texts?["body"] as? String).replacingOccurrences(of: "\n", with: " / ")
            let line = "  \(locale): \(title) — \(body)"
            if firsts[locale] == nil { firsts[locale] = line }
            if oneLanguage { expected[locale] = line }
        }
        expected.merge(firsts) { sample, _ in sample }
        #expect(Set(expected.keys) == ["en", "pl", "ru", "zh-Hans"], "every shipped locale has readers in the demo")
        #expect(printed == [
            "  de: no message (no reader of this locale got one)", expected["en"], expected["pl"], expected["ru"],
            expected["zh-Hans"],
        ])
    }
}
