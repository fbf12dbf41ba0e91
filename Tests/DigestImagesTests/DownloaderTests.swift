import DigestDemo
import DigestImageCodecs
@testable import DigestImages
import Testing

/// The downloader against a loopback server that misbehaves in every way the issue lists.
@Suite struct DownloaderTests {
    // Generous limits: other suites run alongside, and their blocking work can hold every thread of
    // the concurrency pool (that the downloader's tasks need) for tens of seconds on 2 busy cores.
    static func downloader(allow: String? = "127.0.0.1", total: Duration = .seconds(60), maxBytes: Int = 1_000_000) throws -> ImageDownloader {
        var configuration = ImageDownloader.Configuration()
        configuration.totalTimeout = total
        configuration.connectTimeout = .seconds(10)  // a loopback connect took over 1 s in a loaded run
        configuration.maxBytes = maxBytes
        if let allow { configuration.addressGuard = try AddressGuard(allowList: allow) }
        return ImageDownloader(configuration: configuration)
    }

    /// `reason` is `expected` (a plain comparison, so a failure shows the reason there was).
    static func expect(_ reason: String?, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(reason == expected, sourceLocation: sourceLocation)
    }

    static func reason(_ downloader: ImageDownloader, _ url: String) async -> String? {
        do {
            _ = try await downloader.fetch(url)
            return nil
        } catch {
            return error.reason
        }
    }

    static let jpeg: [UInt8] = (try? SamplePictures.jpeg(SamplePictures.photo(width: 64, height: 48, seed: 1))) ?? []

    @Test func statusesRedirectsAndCaps() async throws {
        let routes = LoopbackRoutes([
            "/image.jpg": .ok(Self.jpeg, contentType: "image/jpeg; charset=binary"),
            "/500": .bytes(status: 500, body: Array("oops".utf8), contentType: "text/plain"),
            "/empty": .ok([], contentType: "image/jpeg"),
            "/loop": .redirect(location: "/loop", status: 302),
            "/to-private": .redirect(location: "http://192.168.1.20/x.jpg", status: 301),
            "/to-mapped": .redirect(location: "http://[::ffff:10.0.0.1]/x.jpg", status: 307),
            "/to-link-local": .redirect(location: "http://169.254.169.254/latest/meta-data", status: 302),
            "/to-ftp": .redirect(location: "ftp://127.0.0.1/x.jpg", status: 302),
            "/no-location": .bytes(status: 302, body: [], contentType: nil),
            "/declared-big": .endless(contentType: "image/jpeg", declaredLength: 20_000_000),
            "/streamed-big": .endless(contentType: "image/jpeg", declaredLength: nil),
        ])
        for hop in 1...6 { routes["/r\(hop)"] = .redirect(location: hop == 6 ? "/image.jpg" : "/r\(hop + 1)", status: 302) }
        try await LoopbackHTTPServer.serve(routes) { server in
            let downloader = try Self.downloader()
            let image = try await downloader.fetch(server.url("/image.jpg"))
            #expect(image.bytes == Self.jpeg)
            #expect(image.contentType == "image/jpeg")

            Self.expect(await Self.reason(downloader, server.url("/missing")), "http_404")
            Self.expect(await Self.reason(downloader, server.url("/500")), "http_500")
            #expect(try await downloader.fetch(server.url("/empty")).bytes.isEmpty)
            Self.expect(await Self.reason(downloader, server.url("/loop")), "too_many_redirects")
            #expect(routes.hits["/loop"] == 6, "the first request and five redirects")
            Self.expect(await Self.reason(downloader, server.url("/to-private")), "address_refused")
            Self.expect(await Self.reason(downloader, server.url("/to-mapped")), "address_refused")
            Self.expect(await Self.reason(downloader, server.url("/to-link-local")), "address_refused")
            Self.expect(await Self.reason(downloader, server.url("/to-ftp")), "bad_url")
            Self.expect(await Self.reason(downloader, server.url("/no-location")), "bad_redirect")
            Self.expect(await Self.reason(downloader, server.url("/declared-big")), "too_large")
            Self.expect(await Self.reason(downloader, server.url("/streamed-big")), "too_large")
            // Five redirects are followed; the sixth is one too many.
            let five = try await downloader.fetch(server.url("/r2"))
            #expect(five.redirects == 5 && five.bytes == Self.jpeg)
            Self.expect(await Self.reason(downloader, server.url("/r1")), "too_many_redirects")
        }
    }

    @Test func aSlowServerTimesOut() async throws {
        // 200 KB at 10 bytes every 100 ms: over half an hour if nothing stopped it.
        let body = [UInt8](repeating: 7, count: 200_000)
        let routes = LoopbackRoutes(["/slow": .trickle(body: body, contentType: "image/jpeg", chunkSize: 10, interval: .milliseconds(100))])
        try await LoopbackHTTPServer.serve(routes) { server in
            let downloader = try Self.downloader(total: .seconds(1))
            let started = ContinuousClock.now
            Self.expect(await Self.reason(downloader, server.url("/slow")), "timeout")
            // Other suites can starve the concurrency pool for a while; a hang would take half an hour.
            #expect(started.duration(to: .now) < .seconds(60))
        }
    }

    @Test func loopbackIsRefusedUnlessAllowed() async throws {
        let routes = LoopbackRoutes(["/image.jpg": .ok(Self.jpeg, contentType: "image/jpeg")])
        try await LoopbackHTTPServer.serve(routes) { server in
            let nothingAllowed = try Self.downloader(allow: nil)
            let othersAllowed = try Self.downloader(allow: "10.0.0.0/8,::1")
            let loopbackAllowed = try Self.downloader(allow: "127.0.0.0/8")
            Self.expect(await Self.reason(nothingAllowed, server.url("/image.jpg")), "address_refused")
            Self.expect(await Self.reason(othersAllowed, server.url("/image.jpg")), "address_refused")
            #expect(await Self.reason(loopbackAllowed, server.url("/image.jpg")) == nil)
            #expect(routes.hits["/image.jpg"] == 1, "refused hosts are never contacted")
        }
    }

    @Test func onlyHTTPAndHTTPSAreFetched() async throws {
        let downloader = try Self.downloader()
        for url in ["ftp://127.0.0.1/x.jpg", "file:///etc/passwd", "gopher://127.0.0.1/", "not a url", "http://"] {
            #expect(await Self.reason(downloader, url) == "bad_url", "\(url)")
        }
        Self.expect(await Self.reason(downloader, "http://no-such-host.invalid/x.jpg"), "dns_failed")
    }

    @Test func aClosedPortFailsToConnect() async throws {
        // Port 9 (discard) has no listener here. async-http-client retries refused connections until
        // its connect timeout; on a busy machine the total deadline can come first.
        let downloader = try Self.downloader(total: .seconds(5))
        do {
            _ = try await downloader.fetch("http://127.0.0.1:9/x.jpg")
            Issue.record("a closed port cannot answer")
        } catch {
            #expect(["connect_failed", "timeout"].contains(error.reason), "\(error)")
        }
    }
}

@Suite struct AddressGuardTests {
    @Test(arguments: [
        ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("10.1.2.3", "private"), ("172.16.0.1", "private"),
        ("172.31.255.255", "private"), ("192.168.0.1", "private"), ("169.254.169.254", "link-local"), ("0.0.0.0", "unspecified"),
        ("100.64.0.1", "shared (carrier NAT)"), ("224.0.0.1", "multicast"), ("255.255.255.255", "reserved"),
        ("::1", "loopback"), ("::", "unspecified"), ("fe80::1", "link-local"), ("fd12:3456::1", "private (unique local)"),
        ("::ffff:127.0.0.1", "IPv4-mapped IPv6 address"), ("::ffff:8.8.8.8", "IPv4-mapped IPv6 address"),
        ("64:ff9b::a00:1", "NAT64 of private"), ("2002:c0a8:0101::1", "6to4 of private"), ("ff02::1", "multicast"),
        ("::127.0.0.1", "IPv4-compatible IPv6 address"),
    ])
    func internalAddressesAreRefused(_ address: String, _ category: String) throws {
        #expect(AddressGuard().refusal(for: try #require(IPAddress(address))) == category)
    }

    @Test(arguments: ["8.8.8.8", "172.32.0.1", "93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "64:ff9b::808:808", "2002:808:808::1"])
    func publicAddressesPass(_ address: String) throws {
        #expect(AddressGuard().refusal(for: try #require(IPAddress(address))) == nil)
    }

    @Test func allowListTakesAddressesAndRanges() throws {
        let guard_ = try AddressGuard(allowList: "127.0.0.1, 10.0.0.0/8,fd00::/8")
        #expect(guard_.refusal(for: IPAddress("127.0.0.1")!) == nil)
        #expect(guard_.refusal(for: IPAddress("127.0.0.2")!) == "loopback")
        #expect(guard_.refusal(for: IPAddress("10.200.0.1")!) == nil)
        #expect(guard_.refusal(for: IPAddress("fd00::5")!) == nil)
        #expect(guard_.refusal(for: IPAddress("::ffff:127.0.0.1")!) == nil, "a mapped form of an allowed address")
        #expect(guard_.refusal(for: IPAddress("::1")!) == "loopback")
        #expect(throws: ImageError.self) { try AddressGuard(allowList: "localhost") }
        #expect(throws: ImageError.self) { try AddressGuard(allowList: "10.0.0.0/33") }
        #expect(AddressRange("192.168.0.0/16")!.contains(IPAddress("192.168.255.1")!))
        #expect(!AddressRange("192.168.0.0/16")!.contains(IPAddress("192.169.0.1")!))
        #expect(IPAddress("[2001:db8::1]")?.description == "2001:db8::1")
    }
}
