import DigestStore
import DigestTesting
import Foundation
import Testing

/// The page in a real headless Chromium (Debian `chromium`, installed by scripts/setup.sh as root):
/// load it with `?q=u-pl`, which searches and opens the first match, and read back the DOM once every
/// preview image has loaded: each `<img>` carries `data-decoded="1"` when the browser decoded it.
/// One Chromium at a time: two at once on this machine's two cores can outlast the DOM dump's
/// budget, and stopping the server under a connection still in flight trips NIO's writer check.
@Suite(.serialized) struct BrowserPageTests {
    @Test(.enabled(if: Chromium.unavailableReason == nil, Comment(rawValue: Chromium.unavailableReason ?? "")))
    func everyPreviewImageDecodesInChromium() async throws {
        let dir = try TemporaryDirectory()
        let server = PreviewServerTests.server(try await FixtureDatabase.make(in: dir))
        let dom = try await LiveServer.with(server) { port in
            try Chromium.dumpDOM("http://127.0.0.1:\(port)/?q=u-pl&week=\(FixtureDatabase.week)", profile: dir.path("chromium"))
        }
        let status = try #require(Chromium.element(id: "status", in: dom), "no #status in:\n\(dom.prefix(2000))")
        #expect(status.contains("data-state=\"done\""), "\(status)")
        #expect(status.contains("data-images=\"4\""), "\(status)")
        #expect(status.contains("data-decoded=\"4\""), "\(status)")
        let images = Chromium.tags("img", in: dom)
        #expect(images.count == 4)
        for image in images {
            #expect(image.contains("data-decoded=\"1\""), "\(image)")
            #expect(!image.contains("data-natural-width=\"0\""), "\(image)")
        }
        #expect(dom.contains("data-user=\"u-pl\""), "the search listed the user")
    }

    /// A link with the reader, week and source opens that reader's previews, and the page keeps the
    /// three in its URL (`#status`'s `data-link` mirrors it) beside the week's figures.
    @Test(.enabled(if: Chromium.unavailableReason == nil, Comment(rawValue: Chromium.unavailableReason ?? "")))
    func aSharedLinkOpensTheReadersPreviews() async throws {
        let dir = try TemporaryDirectory()
        let server = PreviewServerTests.server(try await FixtureDatabase.make(in: dir))
        let dom = try await LiveServer.with(server) { port in
            try Chromium.dumpDOM(
                "http://127.0.0.1:\(port)/?user=u-zh&week=\(FixtureDatabase.week)&source=computed", profile: dir.path("chromium"))
        }
        let status = try #require(Chromium.element(id: "status", in: dom), "no #status in:\n\(dom.prefix(2000))")
        #expect(status.contains("data-state=\"done\""), "\(status)")
        #expect(status.contains("data-link=\"?user=u-zh&amp;week=2026-W46&amp;source=computed\""), "\(status)")
        #expect(Chromium.element(id: "report", in: dom) != nil, "the week's figures are shown")
    }
}

/// Finding and running Debian's headless Chromium.
enum Chromium {
    static let path: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Why the browser test cannot run here, or `nil` when it can (checked once by loading a page).
    static let unavailableReason: String? = {
        guard path != nil else { return "chromium is not installed (scripts/setup.sh installs it as root)" }
        do {
            let dom = try dumpDOM("data:text/html,<p id=probe>ok</p>", profile: nil, budget: 2000)
            return dom.contains("probe") ? nil : "chromium ran but returned no page: \(dom.prefix(200))"
        } catch {
            return "chromium cannot run here: \(error)"
        }
    }()

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Loads `url` headless and returns the DOM after `budget` ms of virtual time (network waits
    /// do not count), as `--dump-dom` prints it.
    static func dumpDOM(_ url: String, profile: String?, budget: Int = 20_000) throws -> String {
        guard let path else { throw Failure(description: "chromium is not installed") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        var arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--disable-extensions", "--virtual-time-budget=\(budget)", "--dump-dom", url,
        ]
        let profileDirectory = profile ?? NSTemporaryDirectory() + "digest-chromium-\(UUID().uuidString)"
        arguments.insert("--user-data-dir=\(profileDirectory)", at: 0)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = DispatchTime.now() + .seconds(90)
        let reader = DispatchQueue(label: "chromium-out")
        let box = OutputBox()
        let done = DispatchSemaphore(value: 0)
        reader.async {
            box.data = out.fileHandleForReading.readDataToEndOfFile()
            done.signal()
        }
        if done.wait(timeout: deadline) == .timedOut {
            process.terminate()
            throw Failure(description: "chromium did not finish within 90 s")
        }
        process.waitUntilExit()
        if profile == nil { try? FileManager.default.removeItem(atPath: profileDirectory) }
        guard process.terminationStatus == 0 else {
            throw Failure(description: "chromium exited with status \(process.terminationStatus)")
        }
        return String(decoding: box.data, as: UTF8.self)
    }

    /// The opening tag of the element with `id`.
    static func element(id: String, in dom: String) -> String? {
        tags("[a-z]+", in: dom).first { $0.contains("id=\"\(id)\"") }
    }

    /// Opening tags named `name` (a regular expression).
    static func tags(_ name: String, in dom: String) -> [String] {
        guard let regex = try? NSRegularExpression(pattern: "<\(name)\\b[^>]*>") else { return [] }
        let range = NSRange(dom.startIndex..., in: dom)
        return regex.matches(in: dom, range: range).compactMap { Range($0.range, in: dom).map { String(dom[$0]) } }
    }
}

/// Chromium's output, written by one reader thread before it signals.
private final class OutputBox: @unchecked Sendable {
    var data = Data()
}
