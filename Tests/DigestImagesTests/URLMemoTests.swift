import DigestCore
import DigestDemo
import DigestImageCodecs
@testable import DigestImages
import DigestTesting
import Foundation
import Testing

/// The URL memo across processes: each test runs providers one after the other over one attachments
/// directory (as the hourly runs of a week do) against a loopback server that counts requests, with
/// the memo's clock set by the test.
@Suite struct URLMemoTests {
    /// The first provider's now (Unix seconds); later ones count from it.
    static let start = ImageAttachmentsTests.now
    static let hour: Int64 = 3600
    static let lifetime: Int64 = 6 * 24 * 3600

    static func configuration(_ dir: TemporaryDirectory, at now: Int64) throws -> ImageAttachments.Configuration {
        var configuration = try ImageAttachmentsTests.configuration(dir)
        configuration.clock = { now }
        return configuration
    }

    static let page = Array("<!doctype html><title>Moved</title>".utf8)

    /// One provider's life: asks for each path once, returns the outcomes and its statistics.
    static func run(
        _ paths: [String], on server: LoopbackHTTPServer, with configuration: ImageAttachments.Configuration
    ) async throws -> (outcomes: [String: ImageOutcome], statistics: [String: Int]) {
        try await ImageAttachments.with(configuration) { attachments in
            var outcomes: [String: ImageOutcome] = [:]
            for path in paths { outcomes[path] = await attachments.renditions(forImageAt: server.url(path)) }
            return (outcomes, await attachments.statistics())
        }
    }

    static func entry(_ configuration: ImageAttachments.Configuration, for url: String) throws -> URLMemo.Entry {
        let file = configuration.directory.appendingPathComponent(".urls/\(URLMemo.key(for: url)).json")
        return try JSONDecoder().decode(URLMemo.Entry.self, from: Data(contentsOf: file))
    }

    @Test func aLaterProcessGetsTheRememberedOutcomesWithoutARequest() async throws {
        let dir = try TemporaryDirectory()
        let routes = LoopbackRoutes([
            "/photo.jpg": .ok(ImageAttachmentsTests.photo, contentType: "image/jpeg"),
            "/anim.gif": .ok(ImageAttachmentsTests.gif, contentType: "image/gif"),
            "/page.jpg": .ok(Self.page, contentType: "image/jpeg"),
        ])
        let paths = ["/photo.jpg", "/anim.gif", "/missing.jpg", "/page.jpg"]
        try await LoopbackHTTPServer.serve(routes) { server in
            let first = try await Self.run(paths, on: server, with: Self.configuration(dir, at: Self.start))
            #expect(first.statistics["downloads"] == 4 && first.statistics["fetched"] == 2, "\(first.statistics)")
            #expect(first.statistics["remembered"] == nil, "\(first.statistics)")
            guard case .ready(let photo)? = first.outcomes["/photo.jpg"], case .ready(let gif)? = first.outcomes["/anim.gif"] else {
                Issue.record("the good images must be ready: \(first.outcomes)")
                return
            }
            #expect(photo.icon != nil && gif.icon == nil)
            #expect(first.outcomes["/missing.jpg"] == .unavailable(reason: "http_404"))
            #expect(first.outcomes["/page.jpg"] == .unavailable(reason: "not_an_image"))

            // The next hourly run: a new provider over the same directory.
            let configuration = try Self.configuration(dir, at: Self.start + Self.hour)
            let second = try await Self.run(paths, on: server, with: configuration)
            #expect(second.outcomes == first.outcomes)
            #expect(second.statistics == ["remembered": 4], "no download, nothing made: \(second.statistics)")
            for path in paths {
                #expect(routes.hits[path] == 1, "\(path) was requested \(routes.hits[path] ?? 0) times")
            }

            // One entry per URL, named by the URL's hash, holding the URL and the fetch instant.
            let folder = configuration.directory.appendingPathComponent(".urls")
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(Set(names) == Set(paths.map { "\(URLMemo.key(for: server.url($0))).json" }), "no temporary files left: \(names)")
            #expect(names.allSatisfy { $0.wholeMatch(of: /[0-9a-f]{32}\.json/) != nil })
            let entry = try Self.entry(configuration, for: server.url("/photo.jpg"))
            #expect(entry.url == server.url("/photo.jpg") && entry.fetchedAt == Self.start && entry.failure == nil)
            #expect(entry.hero?.name == photo.hero.url.split(separator: "/").last.map(String.init))
            #expect(entry.hero?.width == 1024 && entry.hero?.height == 512 && entry.hero?.bytes == photo.hero.byteCount)
            #expect(try Self.entry(configuration, for: server.url("/missing.jpg")).failure == "http_404")
        }
    }

    @Test func anOutcomeIsFetchedAgainAfterTheLifetimeAndNeverWithoutAMemo() async throws {
        let dir = try TemporaryDirectory()
        let routes = LoopbackRoutes(["/photo.jpg": .ok(ImageAttachmentsTests.photo, contentType: "image/jpeg")])
        let url = "/photo.jpg"
        try await LoopbackHTTPServer.serve(routes) { server in
            #expect(try Self.configuration(dir, at: 0).urlMemoLifetime == .seconds(Self.lifetime), "six days by default")
            let first = try await Self.run([url], on: server, with: Self.configuration(dir, at: Self.start))
            #expect(first.statistics["fetched"] == 1)

            let lastSecond = try await Self.run([url], on: server, with: Self.configuration(dir, at: Self.start + Self.lifetime - 1))
            #expect(lastSecond.statistics == ["remembered": 1] && routes.hits[url] == 1, "\(lastSecond.statistics)")

            // Expired: fetched again (the files are still there, so reused), and remembered anew.
            let expired = try await Self.run([url], on: server, with: Self.configuration(dir, at: Self.start + Self.lifetime))
            #expect(expired.statistics == ["downloads": 1, "reused": 1], "\(expired.statistics)")
            #expect(expired.outcomes == first.outcomes && routes.hits[url] == 2)
            let renewed = try Self.configuration(dir, at: Self.start + Self.lifetime + Self.hour)
            #expect(try Self.entry(renewed, for: server.url(url)).fetchedAt == Self.start + Self.lifetime)
            let afterRenewal = try await Self.run([url], on: server, with: renewed)
            #expect(afterRenewal.statistics == ["remembered": 1] && routes.hits[url] == 2, "\(afterRenewal.statistics)")

            // A lifetime of zero turns the memo off: neither read nor written.
            var off = try Self.configuration(dir, at: Self.start + Self.lifetime + 2 * Self.hour)
            off.urlMemoLifetime = .zero
            let withoutMemo = try await Self.run([url], on: server, with: off)
            #expect(withoutMemo.statistics == ["downloads": 1, "reused": 1] && routes.hits[url] == 3, "\(withoutMemo.statistics)")
            #expect(try Self.entry(renewed, for: server.url(url)).fetchedAt == Self.start + Self.lifetime, "not rewritten")

            let elsewhere = try TemporaryDirectory()
            var offElsewhere = try Self.configuration(elsewhere, at: Self.start)
            offElsewhere.urlMemoLifetime = .zero
            _ = try await Self.run([url], on: server, with: offElsewhere)
            #expect(!FileManager.default.fileExists(atPath: offElsewhere.directory.appendingPathComponent(".urls").path))
        }
    }

    @Test func transientFailuresAreFetchedAgainAndPermanentOnesAreNot() async throws {
        let dir = try TemporaryDirectory()
        let routes = LoopbackRoutes([
            "/unavailable.jpg": .bytes(status: 503, body: Array("try later".utf8), contentType: "text/plain"),
            "/busy.jpg": .bytes(status: 429, body: [], contentType: nil),
            "/forbidden.jpg": .bytes(status: 403, body: [], contentType: nil),
        ])
        let paths = ["/unavailable.jpg", "/busy.jpg", "/missing.jpg", "/forbidden.jpg"]
        try await LoopbackHTTPServer.serve(routes) { server in
            let first = try await Self.run(paths, on: server, with: Self.configuration(dir, at: Self.start))
            #expect(
                first.outcomes == [
                    "/unavailable.jpg": .unavailable(reason: "http_503"), "/busy.jpg": .unavailable(reason: "http_429"),
                    "/missing.jpg": .unavailable(reason: "http_404"), "/forbidden.jpg": .unavailable(reason: "http_403"),
                ])
            let configuration = try Self.configuration(dir, at: Self.start + Self.hour)
            for path in ["/unavailable.jpg", "/busy.jpg"] {
                let file = configuration.directory.appendingPathComponent(".urls/\(URLMemo.key(for: server.url(path))).json")
                #expect(!FileManager.default.fileExists(atPath: file.path), "\(path): a transient failure is not remembered")
            }

            // An hour later every URL serves the photo; only the transient failures are asked again.
            for path in paths { routes[path] = .ok(ImageAttachmentsTests.photo, contentType: "image/jpeg") }
            let second = try await Self.run(paths, on: server, with: configuration)
            guard case .ready? = second.outcomes["/unavailable.jpg"], case .ready? = second.outcomes["/busy.jpg"] else {
                Issue.record("the transient failures are fetched again: \(second.outcomes)")
                return
            }
            #expect(second.outcomes["/missing.jpg"] == .unavailable(reason: "http_404"))
            #expect(second.outcomes["/forbidden.jpg"] == .unavailable(reason: "http_403"))
            #expect(second.statistics["downloads"] == 2 && second.statistics["remembered"] == 2, "\(second.statistics)")
            #expect(routes.hits == ["/unavailable.jpg": 2, "/busy.jpg": 2, "/missing.jpg": 1, "/forbidden.jpg": 1])
        }
    }

    @Test(arguments: [
        ("http_404", true), ("http_403", true), ("http_410", true), ("http_451", true), ("bad_url", true), ("address_refused", true),
        ("too_many_redirects", true), ("bad_redirect", true), ("too_large", true), ("empty_body", true), ("not_an_image", true),
        ("unsupported_type", true), ("too_many_pixels", true), ("zero_size", true), ("truncated", true), ("corrupt", true),
        ("rendition_too_large", true),
        ("http_500", false), ("http_503", false), ("http_408", false), ("http_429", false), ("http_204", false), ("http_304", false),
        ("timeout", false), ("connect_failed", false), ("dns_failed", false), ("store_failed", false), ("http_+404", false),
        ("http_", false), ("something_new", false),
    ])
    func failuresAreClassified(_ reason: String, _ permanent: Bool) {
        #expect(URLMemo.isPermanent(reason) == permanent)
    }

    @Test func aMemoWhoseRenditionFileWasPrunedIsFetchedAgain() async throws {
        let dir = try TemporaryDirectory()
        let routes = LoopbackRoutes(["/photo.jpg": .ok(ImageAttachmentsTests.photo, contentType: "image/jpeg")])
        let url = "/photo.jpg"
        try await LoopbackHTTPServer.serve(routes) { server in
            let configuration = try Self.configuration(dir, at: Self.start)
            let first = try await Self.run([url], on: server, with: configuration)
            guard case .ready(let photo)? = first.outcomes[url], let icon = photo.icon else {
                Issue.record("the photo must be ready: \(first.outcomes)")
                return
            }
            let iconFile = configuration.directory.appendingPathComponent(String(icon.url.split(separator: "/").last ?? ""))
            try FileManager.default.removeItem(at: iconFile)

            let second = try await Self.run([url], on: server, with: Self.configuration(dir, at: Self.start + Self.hour))
            #expect(second.outcomes == first.outcomes)
            #expect(second.statistics == ["downloads": 1, "fetched": 1], "\(second.statistics)")
            #expect(routes.hits[url] == 2)
            #expect(FileManager.default.fileExists(atPath: iconFile.path), "made again")

            let third = try await Self.run([url], on: server, with: Self.configuration(dir, at: Self.start + 2 * Self.hour))
            #expect(third.statistics == ["remembered": 1] && routes.hits[url] == 2, "\(third.statistics)")
        }
    }

    @Test func aGarbageMemoIsIgnoredAndOverwritten() async throws {
        let dir = try TemporaryDirectory()
        let routes = LoopbackRoutes(["/photo.jpg": .ok(ImageAttachmentsTests.photo, contentType: "image/jpeg")])
        let path = "/photo.jpg"
        try await LoopbackHTTPServer.serve(routes) { server in
            let url = server.url(path)
            let configuration = try Self.configuration(dir, at: Self.start)
            let first = try await Self.run([path], on: server, with: configuration)
            let good = try Self.entry(configuration, for: url)
            let file = configuration.directory.appendingPathComponent(".urls/\(URLMemo.key(for: url)).json")

            func encoded(_ change: (inout URLMemo.Entry) -> Void) throws -> Data {
                var entry = good
                change(&entry)
                return try JSONEncoder().encode(entry)
            }
            let garbage: [(String, Data)] = try [
                ("empty", Data()),
                ("not JSON", Data("\u{0}\u{1}garbage{{".utf8)),
                ("truncated JSON", JSONEncoder().encode(good).prefix(40)),
                ("JSON of another shape", Data(#"{"version":1,"url":3}"#.utf8)),
                ("another version", encoded { $0.version = 99 }),
                ("another URL", encoded { $0.url = server.url("/other.jpg") }),
                ("other settings", encoded { $0.settings = "0000000000000000" }),
                ("far in the future", encoded { $0.fetchedAt = Self.start + 30 * 24 * Self.hour }),
                ("a path outside the directory", encoded { $0.hero?.name = "../../../../etc/passwd" }),
                ("a wrong size", encoded { $0.hero?.bytes += 1 }),
                ("a transient failure", encoded { $0.hero = nil; $0.icon = nil; $0.failure = "timeout" }),
                ("renditions and a failure", encoded { $0.failure = "http_404" }),
                ("neither", encoded { $0.hero = nil; $0.icon = nil }),
            ]
            for (index, (what, bytes)) in garbage.enumerated() {
                try bytes.write(to: file)
                let now = Self.start + Int64(index + 1) * Self.hour
                let later = try await Self.run([path], on: server, with: Self.configuration(dir, at: now))
                #expect(later.outcomes == first.outcomes, "\(what)")
                #expect(later.statistics["downloads"] == 1 && later.statistics["remembered"] == nil, "\(what): \(later.statistics)")
                #expect(routes.hits[path] == index + 2, "\(what)")
                let rewritten = try Self.entry(configuration, for: url)
                #expect(rewritten.fetchedAt == now && rewritten.hero == good.hero && rewritten.icon == good.icon, "\(what): overwritten")
            }
            let last = try await Self.run([path], on: server, with: Self.configuration(dir, at: Self.start + 20 * Self.hour))
            #expect(last.statistics == ["remembered": 1] && routes.hits[path] == garbage.count + 1, "\(last.statistics)")
        }
    }

    /// A later process that uses files already in the directory (answered from the memo, or found by
    /// name with the memo off) marks them used: their modification time moves to now, so a prune's
    /// grace period (`AttachmentSweep`) spares them until the messages linking them are enqueued.
    @Test func rememberedAndReusedFilesAreMarkedUsed() async throws {
        let dir = try TemporaryDirectory()
        let routes = LoopbackRoutes(["/photo.jpg": .ok(ImageAttachmentsTests.photo, contentType: "image/jpeg")])
        try await LoopbackHTTPServer.serve(routes) { server in
            let first = try await Self.run(["/photo.jpg"], on: server, with: Self.configuration(dir, at: Self.start))
            guard case .ready(let photo)? = first.outcomes["/photo.jpg"], let icon = photo.icon else {
                Issue.record("the photo must be ready with an icon: \(first.outcomes)")
                return
            }
            let base = try Self.configuration(dir, at: Self.start).directory
            let files = [photo.hero, icon].map { base.appendingPathComponent(String($0.url.split(separator: "/").last!)).path }
            /// 1 January 2001: long before any run.
            let ancient: Int64 = 978_307_200
            func age() throws {
                for file in files {
                    try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: Double(ancient))], ofItemAtPath: file)
                }
            }
            func modified() throws -> [Int64] {
                try files.map { Int64(((try FileManager.default.attributesOfItem(atPath: $0)[.modificationDate]) as! Date).timeIntervalSince1970) }
            }
            try age()
            let remembered = try await Self.run(["/photo.jpg"], on: server, with: Self.configuration(dir, at: Self.start + Self.hour))
            #expect(remembered.statistics == ["remembered": 1], "\(remembered.statistics)")
            #expect(try modified().allSatisfy { $0 > ancient })
            try age()
            var off = try Self.configuration(dir, at: Self.start + 2 * Self.hour)
            off.urlMemoLifetime = .zero
            let reused = try await Self.run(["/photo.jpg"], on: server, with: off)
            #expect(reused.statistics == ["downloads": 1, "reused": 1], "\(reused.statistics)")
            #expect(try modified().allSatisfy { $0 > ancient })
        }
    }
}
