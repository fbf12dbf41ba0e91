import DigestCore
import DigestDemo
import DigestImageCodecs
@testable import DigestImages
import DigestTesting
import Foundation
import Testing

/// The run's attachment provider against a loopback server: one download per URL however many ask,
/// failures remembered, files named by hash, reuse across runs, and every bad input as a reason.
@Suite struct ImageAttachmentsTests {
    /// The providers' clock (Unix seconds): the URL memo's instants are fixed, never the wall clock.
    static let now: Int64 = 1_794_355_200

    static func configuration(_ dir: TemporaryDirectory) throws -> ImageAttachments.Configuration {
        var configuration = ImageAttachments.Configuration(directory: dir.url.appendingPathComponent("att"), baseURL: "https://cdn.example/att/")
        configuration.downloader.addressGuard = try AddressGuard(allowList: "127.0.0.1")
        // Generous: other suites run alongside (CI saw 20 s run out for good images at a load of
        // 10 on 2 cores); the slow-server case has its own test.
        configuration.downloader.totalTimeout = .seconds(90)
        // A loopback connect took over 5 s (the default) while the suite's 30,000-message send ran.
        configuration.downloader.connectTimeout = .seconds(20)
        configuration.downloader.maxBytes = 2_000_000
        configuration.renderThreads = 2
        configuration.clock = { now }
        return configuration
    }

    static let photo = (try? SamplePictures.jpeg(SamplePictures.photo(width: 800, height: 600, seed: 21))) ?? []
    static let logo = (try? SamplePictures.png(SamplePictures.logo(width: 300, height: 300, seed: 22))) ?? []
    static let gif = ImageBytes.gif(width: 30, height: 20)

    static func routes() -> LoopbackRoutes {
        var truncatedPNG = (try? SamplePictures.png(SamplePictures.photo(width: 200, height: 100, seed: 3), opaque: true)) ?? []
        truncatedPNG = Array(truncatedPNG.prefix(truncatedPNG.count / 2))
        var badCRC = (try? SamplePictures.png(SamplePictures.photo(width: 200, height: 100, seed: 4), opaque: true)) ?? []
        if let idat = ImageBytes.find(Array("IDAT".utf8), in: badCRC) { badCRC[idat + 10] ^= 0x01 }
        let hugePNG = PNGFixture.signature + PNGFixture.chunk("IHDR", PNGFixture.header(width: 100_000, height: 100_000, bitDepth: 8, colorType: 6))
            + PNGFixture.chunk("IEND", [])
        let zeroPNG = PNGFixture.signature + PNGFixture.chunk("IHDR", PNGFixture.header(width: 0, height: 0, bitDepth: 8, colorType: 6))
            + PNGFixture.chunk("IEND", [])
        return LoopbackRoutes([
            "/photo.jpg": .ok(photo, contentType: "image/jpeg"),
            "/logo.png": .ok(logo, contentType: "image/png"),
            "/anim.gif": .ok(gif, contentType: "image/gif"),
            "/labelled-png.jpg": .ok(photo, contentType: "image/png"),
            "/page.jpg": .ok(Array("<!doctype html><title>Gone</title>".utf8), contentType: "image/jpeg"),
            "/500.jpg": .bytes(status: 500, body: [], contentType: nil),
            "/big.jpg": .endless(contentType: "image/jpeg", declaredLength: nil),
            "/loop.jpg": .redirect(location: "/loop.jpg", status: 302),
            "/private.jpg": .redirect(location: "http://10.1.2.3/x.jpg", status: 302),
            "/truncated.jpg": .ok(Array(photo.prefix(photo.count / 2)), contentType: "image/jpeg"),
            "/truncated.png": .ok(truncatedPNG, contentType: "image/png"),
            "/bad-crc.png": .ok(badCRC, contentType: "image/png"),
            "/huge.png": .ok(hugePNG, contentType: "image/png"),
            "/zero.png": .ok(zeroPNG, contentType: "image/png"),
            "/image.webp": .ok(Array("RIFF\u{24}\u{0}\u{0}\u{0}WEBPVP8 ".utf8) + [UInt8](repeating: 0, count: 30), contentType: "image/webp"),
            "/image.svg": .ok(Array("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"/>".utf8), contentType: "image/svg+xml"),
            "/empty.jpg": .ok([], contentType: "image/jpeg"),
        ])
    }

    /// Bad input → reason on the outcome.
    static let expectedFailures: [String: String] = [
        "/missing.jpg": "http_404", "/500.jpg": "http_500", "/big.jpg": "too_large",
        "/loop.jpg": "too_many_redirects", "/private.jpg": "address_refused", "/page.jpg": "not_an_image",
        "/truncated.jpg": "truncated", "/truncated.png": "truncated", "/bad-crc.png": "corrupt", "/huge.png": "too_many_pixels",
        "/zero.png": "zero_size", "/image.webp": "unsupported_type", "/image.svg": "unsupported_type", "/empty.jpg": "empty_body",
    ]

    @Test func everyURLIsFetchedOnceAndEveryFailureHasItsReason() async throws {
        let dir = try TemporaryDirectory()
        let configuration = try Self.configuration(dir)
        let routes = Self.routes()
        try await LoopbackHTTPServer.serve(routes) { server in
            let paths = ["/photo.jpg", "/logo.png", "/anim.gif", "/labelled-png.jpg"] + Self.expectedFailures.keys.sorted()
            let outcomes = try await ImageAttachments.with(configuration) { attachments in
                // Twenty users ask for each image at once.
                let all = await withTaskGroup(of: (String, ImageOutcome).self) { group in
                    for _ in 0..<20 {
                        for path in paths {
                            group.addTask { (path, await attachments.renditions(forImageAt: server.url(path))) }
                        }
                    }
                    var seen: [String: Set<ImageOutcome>] = [:]
                    for await (path, outcome) in group { seen[path, default: []].insert(outcome) }
                    return seen
                }
                let statistics = await attachments.statistics()
                #expect(statistics["downloads"] == paths.count, "one download per URL: \(statistics)")
                // /labelled-png.jpg serves the same bytes as /photo.jpg: whichever finishes second finds
                // the other's files (same names) and counts as reused.
                #expect((statistics["fetched"] ?? 0) + (statistics["reused"] ?? 0) == 4, "\(statistics)")
                #expect(statistics["content_type_mismatch"] == 2)
                for (_, reason) in Self.expectedFailures {
                    #expect((statistics["failed:\(reason)"] ?? 0) >= 1, "\(reason) in \(statistics)")
                }
                return all
            }
            for path in paths {
                #expect(outcomes[path]?.count == 1, "every asker of \(path) gets the same outcome")
                #expect(routes.hits[path] == (path == "/loop.jpg" ? 6 : 1), "\(path) was requested \(routes.hits[path] ?? 0) times")
            }
            for (path, reason) in Self.expectedFailures {
                #expect(outcomes[path]?.first == .unavailable(reason: reason), "\(path)")
            }

            guard case .ready(let photo)? = outcomes["/photo.jpg"]?.first,
                case .ready(let logo)? = outcomes["/logo.png"]?.first,
                case .ready(let gif)? = outcomes["/anim.gif"]?.first
            else {
                Issue.record("the good images must be ready: \(["/photo.jpg", "/logo.png", "/anim.gif"].map { outcomes[$0] ?? [] })")
                return
            }
            #expect(photo.hero.mimeType == "image/jpeg" && photo.hero.width == 1024 && photo.hero.height == 512)
            #expect(photo.icon?.mimeType == "image/jpeg" && photo.icon?.width == 256 && photo.icon?.height == 256)
            #expect(logo.hero.mimeType == "image/png" && logo.icon?.mimeType == "image/png")
            #expect(gif.hero.mimeType == "image/gif" && gif.hero.width == 30 && gif.icon == nil)
            let pattern = /^https:\/\/cdn\.example\/att\/[0-9a-f]{32}\.(jpg|png|gif)$/
            for rendition in [photo.hero, photo.icon!, logo.hero, logo.icon!, gif.hero] {
                #expect(rendition.url.wholeMatch(of: pattern) != nil, "\(rendition.url)")
                let name = String(rendition.url.split(separator: "/").last!)
                let ext = name.split(separator: ".").last!
                #expect(ext == fileExtension(forMIMEType: rendition.mimeType))
                let file = configuration.directory.appendingPathComponent(name)
                let data = try Data(contentsOf: file)
                #expect(data.count == rendition.byteCount)
                #expect(ImageKind(sniffing: data).mimeType == rendition.mimeType)
            }
            #expect(Set([photo.hero.url, photo.icon!.url, logo.hero.url, logo.icon!.url, gif.hero.url]).count == 5)
            let memo = configuration.directory.appendingPathComponent(".urls")
            let files = try FileManager.default.contentsOfDirectory(atPath: configuration.directory.path)
            let entries = try FileManager.default.contentsOfDirectory(atPath: memo.path)
            let leftovers = files.filter { $0.hasPrefix(".") && $0 != ".urls" } + entries.filter { $0.hasPrefix(".") }
            #expect(leftovers.isEmpty, "no temporary files left: \(leftovers)")

            // A later run is answered from the URL memo, without a request (see URLMemoTests).
            try await ImageAttachments.with(configuration) { attachments in
                #expect(await attachments.renditions(forImageAt: server.url("/photo.jpg")) == .ready(photo))
                #expect(await attachments.statistics() == ["remembered": 1])
            }
            #expect(routes.hits["/photo.jpg"] == 1)

            // Without the memo, a later run finds the files and reuses them (it still downloads once to
            // hash the source).
            var withoutMemo = configuration
            withoutMemo.urlMemoLifetime = .zero
            try await ImageAttachments.with(withoutMemo) { attachments in
                let again = await attachments.renditions(forImageAt: server.url("/photo.jpg"))
                #expect(again == .ready(photo))
                let statistics = await attachments.statistics()
                #expect(statistics["reused"] == 1 && statistics["fetched"] == nil)
            }
        }
    }

    @Test func aSlowServerEndsInATimeoutAndATextFallbackReason() async throws {
        let dir = try TemporaryDirectory()
        var configuration = try Self.configuration(dir)
        configuration.downloader.totalTimeout = .seconds(3)
        let routes = LoopbackRoutes([
            "/slow.jpg": .trickle(body: Self.photo + Self.photo, contentType: "image/jpeg", chunkSize: 10, interval: .milliseconds(50))
        ])
        try await LoopbackHTTPServer.serve(routes) { server in
            try await ImageAttachments.with(configuration) { attachments in
                #expect(await attachments.renditions(forImageAt: server.url("/slow.jpg")) == .unavailable(reason: "timeout"))
                #expect(await attachments.renditions(forImageAt: server.url("/slow.jpg")) == .unavailable(reason: "timeout"))
                #expect(await attachments.statistics()["failed:timeout"] == 1)
            }
            // The failure is remembered: no second request. (On a busy machine the first can time
            // out before its request reached the server, so none at all is fine too.)
            #expect((routes.hits["/slow.jpg"] ?? 0) <= 1, "the failure is remembered")
        }
    }
}
