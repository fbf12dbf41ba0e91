import DigestCore
import DigestDemo
import DigestImageCodecs
import DigestImages
import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Testing

/// `digest run --attachments … --allow-hosts 127.0.0.1` through the real binary: Image messages point
/// at files that exist; an image that fails falls back to a text variant with its reason recorded.
@Suite struct RunWithImagesTests {
    static let fixtures = DigestBinary.packageRoot.appendingPathComponent("Tests/DigestRunTests/Fixtures")

    /// Runs the binary (waiting for it holds no thread of the concurrency pool, which the
    /// in-process server and other suites need).
    static func run(_ arguments: [String]) async throws -> DigestBinary.Output {
        try await DigestBinary.run(arguments)
    }

    @Test func theRunMakesImageMessagesFromRealFilesAndRecordsFailures() async throws {
        let dir = try TemporaryDirectory()
        let photo = try SamplePictures.jpeg(SamplePictures.photo(width: 900, height: 600, seed: 5))
        // a7.jpg is u-pl's top pick (see DigestRunTests); a1 and a4 are missing (404).
        let routes = LoopbackRoutes(["/img/a7.jpg": .ok(photo, contentType: "image/jpeg")])
        try await LoopbackHTTPServer.serve(routes) { server in
            let articles = try String(contentsOf: Self.fixtures.appendingPathComponent("articles.jsonl"), encoding: .utf8)
                .replacingOccurrences(of: "https://img.example/", with: server.url("/img/"))
            try articles.write(toFile: dir.path("articles.jsonl"), atomically: true, encoding: .utf8)
            let db = dir.path("digest.sqlite")
            let imported = try await Self.run([
                "import", "--db", db, Self.fixtures.appendingPathComponent("users.jsonl").path, dir.path("articles.jsonl"),
                Self.fixtures.appendingPathComponent("reads.jsonl").path,
            ])
            #expect(imported.status == 0, "\(imported.stderr)")
            let attachments = dir.path("attachments")
            let run = try await Self.run([
                "run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z", "--attachments", attachments, "--attachments-url", "https://cdn.example/a",
                "--allow-hosts", "127.0.0.1", "--report", dir.path("report.json"),
            ])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("variants: ") && run.stdout.contains("Image 1"), "\(run.stdout)")
            #expect(run.stdout.contains("image files: "), "\(run.stdout)")
            #expect(run.stdout.contains("fetched 1"), "\(run.stdout)")
            #expect(run.stdout.contains("http_404"), "\(run.stdout)")

            let rows = try await SQLiteDatabase.sqlite(path: db).peek(limit: 50, state: nil)
            let image = rows.filter { $0.variant == .image }
            #expect(!image.isEmpty)
            for row in image {
                let urls = row.message.matches(of: /https:\/\/cdn\.example\/a\/([0-9a-f]{32}\.jpg)/).map { String($0.output.1) }
                #expect(!urls.isEmpty)
                for name in urls {
                    #expect(FileManager.default.fileExists(atPath: "\(attachments)/\(name)"), "\(name)")
                }
            }
            let fallbacks = rows.filter { $0.report.contains("image.unavailable") }
            #expect(!fallbacks.isEmpty)
            #expect(fallbacks.allSatisfy { $0.variant != .image && $0.report.contains("http_404") })
            #expect(routes.hits["/img/a7.jpg"] == 1)

            // A preview composed now goes through the same image pipeline: the run's variant, with the
            // picture drawn from the renditions (not a placeholder). Without the options, the image
            // digest falls back to text, as a run without them would.
            guard let user = image.first?.userID else { return }
            func preview(_ extra: [String], into name: String) async throws -> [String: Any] {
                let result = try await Self.run([
                    "preview", "--db", db, "--user", user, "--week", "2026-W46", "--source", "computed", "--scale", "1",
                    "--platform", "android", "--out", dir.path(name),
                ] + extra)
                #expect(result.status == 0, "\(result.stderr)")
                let data = try Data(contentsOf: URL(fileURLWithPath: dir.path("\(name)/preview.json")))
                return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
            }
            let withImages = try await preview(
                ["--attachments", attachments, "--attachments-url", "https://cdn.example/a", "--allow-hosts", "127.0.0.1"], into: "with")
            #expect(withImages["variant"] as? String == "Image", "\(withImages)")
            let notes = (withImages["previews"] as? [[String: Any]] ?? []).flatMap { $0["notes"] as? [String] ?? [] }
            #expect(!notes.contains { $0.contains("not readable") }, "\(notes)")
            let withoutImages = try await preview([], into: "without")
            #expect(withoutImages["variant"] as? String != "Image", "\(withoutImages)")
        }
    }

    @Test func imageOptionsAreChecked() async throws {
        let dir = try TemporaryDirectory()
        let db = dir.path("digest.sqlite")
        let noURL = try await Self.run(["run", "--db", db, "--attachments", dir.path("a")])
        #expect(noURL.status != 0 && noURL.stderr.contains("--attachments needs --attachments-url"), "\(noURL.stderr)")
        let noDirectory = try await Self.run(["run", "--db", db, "--attachments-url", "https://cdn.example"])
        #expect(noDirectory.status != 0 && noDirectory.stderr.contains("--attachments-url needs --attachments"))
        let badHosts = try await Self.run([
            "run", "--db", db, "--attachments", dir.path("a"), "--attachments-url", "https://cdn.example", "--allow-hosts", "localhost",
        ])
        #expect(badHosts.status != 0 && badHosts.stderr.contains("--allow-hosts"), "\(badHosts.stderr)")
    }
}
