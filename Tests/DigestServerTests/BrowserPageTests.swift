import DigestStore
import DigestTesting
import Foundation
import Synchronization
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
            try await Chromium.dumpDOM("http://127.0.0.1:\(port)/?q=u-pl&week=\(FixtureDatabase.week)", profile: dir.path("chromium"))
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
        // The reader's preferences card (the store's readers have the defaults).
        let card = try #require(dom.range(of: "id=\"preferences\""), "no #preferences in:\n\(dom.prefix(2000))")
        let inside = dom[card.upperBound...].prefix(300)
        #expect(inside.contains("Reader's preferences") && inside.contains("defaults"), "\(inside)")
    }

    /// A link with the reader, week and source opens that reader's previews, and the page keeps the
    /// three in its URL (`#status`'s `data-link` mirrors it) beside the week's figures.
    @Test(.enabled(if: Chromium.unavailableReason == nil, Comment(rawValue: Chromium.unavailableReason ?? "")))
    func aSharedLinkOpensTheReadersPreviews() async throws {
        let dir = try TemporaryDirectory()
        let server = PreviewServerTests.server(try await FixtureDatabase.make(in: dir))
        let dom = try await LiveServer.with(server) { port in
            try await Chromium.dumpDOM(
                "http://127.0.0.1:\(port)/?user=u-zh&week=\(FixtureDatabase.week)&source=computed", profile: dir.path("chromium"))
        }
        let status = try #require(Chromium.element(id: "status", in: dom), "no #status in:\n\(dom.prefix(2000))")
        #expect(status.contains("data-state=\"done\""), "\(status)")
        #expect(status.contains("data-link=\"?user=u-zh&amp;week=2026-W46&amp;source=computed\""), "\(status)")
        #expect(Chromium.element(id: "report", in: dom) != nil, "the week's figures are shown")
        #expect(Chromium.element(id: "send-test", in: dom) == nil, "no test devices, no \"Send to my device\"")
    }

    /// With `serve --test-devices`, "Send to my device" sits beside the reader: the devices by name,
    /// provider, platform and masked token, one without credentials disabled with the reason.
    @Test(.enabled(if: Chromium.unavailableReason == nil, Comment(rawValue: Chromium.unavailableReason ?? "")))
    func thePageOffersSendToMyDevice() async throws {
        let dir = try TemporaryDirectory()
        let server = TestSendRouteTests.server(try await FixtureDatabase.make(in: dir), sending: TestSendRouteTests.StandIn().sending)
        let dom = try await LiveServer.with(server) { port in
            try await Chromium.dumpDOM("http://127.0.0.1:\(port)/?user=u-pl&week=\(FixtureDatabase.week)", profile: dir.path("chromium"))
        }
        let start = try #require(dom.range(of: "<div class=\"card\" id=\"send-test\">"), "no #send-test in:\n\(dom.prefix(2000))")
        let card = String(dom[start.lowerBound...].prefix(3000))
        #expect(Chromium.tags("button", in: card).contains { $0.contains("id=\"test-send\"") }, "\(card)")
        #expect(card.contains("Ana's Pixel · fcm android · …Xk9Q</option>"), "\(card)")
        #expect(Chromium.tags("option", in: card).contains { $0.contains("disabled") && $0.contains("title=\"no APNs credentials\"") }, "\(card)")
        #expect(Chromium.element(id: "test-send-result", in: card)?.contains("data-state=\"idle\"") == true, "\(card)")
    }

    /// With `serve --compare-templates`, the page shows what the templates change for the reader in
    /// view: their changed messages old beside new, the differing title lines marked.
    @Test(.enabled(if: Chromium.unavailableReason == nil, Comment(rawValue: Chromium.unavailableReason ?? "")))
    func thePageShowsTheTemplateComparison() async throws {
        let dir = try TemporaryDirectory()
        let server = try await TemplateComparisonTests.comparingServer(in: dir)
        let dom = try await LiveServer.with(server) { port in
            try await Chromium.dumpDOM("http://127.0.0.1:\(port)/?user=u-pl&week=\(FixtureDatabase.week)", profile: dir.path("chromium"))
        }
        // The comparison is the page's last section: from its opening tag on.
        let start = try #require(dom.range(of: "<div id=\"comparison\">"), "no #comparison in:\n\(dom.prefix(2000))")
        let comparison = String(dom[start.lowerBound...])
        #expect(comparison.contains("Template comparison: 2 of 2 messages change"), "\(comparison.prefix(2000))")
        #expect(comparison.contains("<li class=\"changed\">title: Wasz tydzień"), "\(comparison.prefix(2000))")
        #expect(comparison.contains("<li class=\"changed\">title: Twój tydzień"), "\(comparison.prefix(2000))")
        #expect(!comparison.contains("<li class=\"changed\">action:"))
        #expect(Chromium.tags("img", in: comparison).count == 8)
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
            let dom = try dumpDOMBlocking("data:text/html,<p id=probe>ok</p>", profile: nil, budget: 2000)
            return dom.contains("probe") ? nil : "chromium ran but returned no page: \(dom.prefix(200))"
        } catch {
            return "chromium cannot run here: \(error)"
        }
    }()

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Loads `url` headless and returns the DOM after `budget` ms of virtual time (network waits
    /// do not count), as `--dump-dom` prints it. Waiting holds no thread of the concurrency pool: the
    /// page's server answers on that pool.
    static func dumpDOM(_ url: String, profile: String?, budget: Int = 20_000) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            startDump(url, profile: profile, budget: budget) { continuation.resume(with: $0) }
        }
    }

    /// ``dumpDOM(_:profile:budget:)`` blocking the calling thread, for the probe of a page that
    /// needs no server.
    static func dumpDOMBlocking(_ url: String, profile: String?, budget: Int) throws -> String {
        let box = ResultBox()
        let done = DispatchSemaphore(value: 0)
        startDump(url, profile: profile, budget: budget) { result in
            box.result = result
            done.signal()
        }
        done.wait()
        return try box.result!.get()
    }

    /// Runs chromium, reads its output on a dispatch queue and calls `completion` once, with the DOM
    /// or why there is none (chromium is terminated after 90 s).
    private static func startDump(
        _ url: String, profile: String?, budget: Int, completion: @escaping @Sendable (Result<String, any Error>) -> Void
    ) {
        guard let path else { return completion(.failure(Failure(description: "chromium is not installed"))) }
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
        do { try DigestBinary.launch(process) } catch { return completion(.failure(error)) }
        // Whichever comes first, the end of the output or the 90 s, decides.
        let outcome = Outcome()
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(90)) {
            if outcome.decide(.timedOut) { process.terminate() }
        }
        DispatchQueue(label: "chromium-out").async {
            let data = out.fileHandleForReading.readDataToEndOfFile()
            let timedOut = !outcome.decide(.finished)
            process.waitUntilExit()
            if profile == nil { try? FileManager.default.removeItem(atPath: profileDirectory) }
            if timedOut {
                completion(.failure(Failure(description: "chromium did not finish within 90 s")))
            } else if process.terminationStatus != 0 {
                completion(.failure(Failure(description: "chromium exited with status \(process.terminationStatus)")))
            } else {
                completion(.success(String(decoding: data, as: UTF8.self)))
            }
        }
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

/// Which came first for one chromium: its output's end or its deadline.
private final class Outcome: Sendable {
    enum Kind { case finished, timedOut }
    private let first = Mutex<Kind?>(nil)

    /// Records `kind` if nothing came first; returns whether it did.
    func decide(_ kind: Kind) -> Bool {
        first.withLock { first in
            guard first == nil else { return false }
            first = kind
            return true
        }
    }
}

/// The probe's result, written by one reader thread before it signals.
private final class ResultBox: @unchecked Sendable {
    var result: Result<String, any Error>?
}
