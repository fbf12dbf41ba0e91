import AsyncHTTPClient
package import DigestImageCodecs
import Foundation
package import NIOCore
import NIOHTTP1
package import NIOPosix

/// Downloads one image over http or https with hard limits: connect and total time, a byte cap
/// enforced while the body streams, a redirect limit, and the address guard.
///
/// The guard is checked on the address actually used: the downloader resolves the host itself
/// (`getaddrinfo`), refuses it if any address is internal, and pins the connection to the checked
/// address (async-http-client's `dnsOverride`; TLS still verifies the host name). So a DNS answer
/// that changes between the check and the connection (rebinding) cannot move the request. Redirects
/// are followed by hand, each hop resolved and checked again.
public struct ImageDownloader: Sendable {
    /// Limits.
    public struct Configuration: Sendable {
        /// Time to establish a connection.
        public var connectTimeout: Duration = .seconds(5)
        /// Time for the whole download, redirects included.
        public var totalTimeout: Duration = .seconds(15)
        /// Largest body accepted, bytes.
        public var maxBytes = 10 * 1024 * 1024
        /// Redirects followed at most.
        public var maxRedirects = 5
        /// Which addresses may be contacted.
        public var addressGuard = AddressGuard()
        public var userAgent = "digest-images/1 (+https://digest.example)"

        public init() {}
    }

    /// A finished download.
    package struct Download: Sendable {
        package var bytes: [UInt8]
        /// The response's Content-Type, without parameters.
        package var contentType: String?
        /// The URL that answered (after redirects).
        package var finalURL: String
        package var redirects: Int
    }

    package let configuration: Configuration
    private let eventLoopGroup: any EventLoopGroup
    private let resolver: HostResolver

    package init(
        configuration: Configuration = Configuration(),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        threadPool: NIOThreadPool = .singleton
    ) {
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.resolver = HostResolver(threadPool: threadPool)
    }

    /// Downloads `url`, or throws an `ImageError` saying why not.
    package func fetch(_ url: String) async throws(ImageError) -> Download {
        let deadline = ContinuousClock.now + configuration.totalTimeout
        do {
            return try await withThrowingTaskGroup(of: Download?.self) { group in
                group.addTask { try await self.follow(url, deadline: deadline) }
                group.addTask {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let download = first else {
                    throw ImageError(.timeout, "the download took longer than \(configuration.totalTimeout)", context: ["url": url])
                }
                return download
            }
        } catch let error as ImageError {
            throw error
        } catch {
            throw Self.classify(error, url: url)
        }
    }

    private func follow(_ url: String, deadline: ContinuousClock.Instant) async throws -> Download {
        var current = url
        var redirects = 0
        while true {
            let (parsed, host) = try Self.parse(current)
            let addresses = try await resolver.resolve(host)
            for address in addresses {
                if let why = configuration.addressGuard.refusal(for: address) {
                    throw ImageError(
                        .addressRefused, "the host resolves to a \(why) address, which is not in --allow-hosts",
                        context: ["url": current, "host": host, "address": "\(address)"])
                }
            }
            let hop = try await get(parsed, host: host, address: addresses[0], deadline: deadline)
            switch hop {
            case .body(let download):
                var download = download
                download.finalURL = current
                download.redirects = redirects
                return download
            case .redirect(let location):
                redirects += 1
                guard redirects <= configuration.maxRedirects else {
                    throw ImageError(
                        .tooManyRedirects, "more than \(configuration.maxRedirects) redirects", context: ["url": url, "last": current])
                }
                guard let next = URL(string: location, relativeTo: parsed)?.absoluteURL.absoluteString else {
                    throw ImageError(.badRedirect, "the redirect's Location is not a URL", context: ["url": current, "location": location])
                }
                current = next
            }
        }
    }

    private enum Hop {
        case body(Download)
        case redirect(String)
    }

    /// One request, pinned to `address`.
    private func get(_ url: URL, host: String, address: IPAddress, deadline: ContinuousClock.Instant) async throws -> Hop {
        var client = HTTPClient.Configuration()
        client.redirectConfiguration = .disallow
        client.decompression = .disabled
        let remaining = ContinuousClock.now.duration(to: deadline)
        client.timeout = .init(connect: Self.timeAmount(min(configuration.connectTimeout, remaining)), read: Self.timeAmount(remaining))
        if IPAddress(host) == nil { client.dnsOverride = [host: address.description] }
        let http = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: client)
        do {
            let hop = try await request(url, with: http, deadline: deadline)
            try? await http.shutdown()
            return hop
        } catch {
            try? await http.shutdown()
            throw error
        }
    }

    private func request(_ url: URL, with http: HTTPClient, deadline: ContinuousClock.Instant) async throws -> Hop {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .GET
        request.headers.add(name: "User-Agent", value: configuration.userAgent)
        request.headers.add(name: "Accept", value: "image/jpeg, image/png, image/gif;q=0.9, */*;q=0.1")
        let remaining = ContinuousClock.now.duration(to: deadline)
        let response = try await http.execute(request, timeout: Self.timeAmount(remaining))
        let status = Int(response.status.code)
        if [301, 302, 303, 307, 308].contains(status) {
            guard let location = response.headers.first(name: "location"), !location.isEmpty else {
                throw ImageError(.badRedirect, "a \(status) redirect without a Location", context: ["url": url.absoluteString])
            }
            return .redirect(location)
        }
        guard status == 200 else {
            throw ImageError(.httpStatus(status), "the server answered \(status)", context: ["url": url.absoluteString])
        }
        let cap = configuration.maxBytes
        if let length = response.headers.first(name: "content-length").flatMap(Int.init), length > cap {
            throw ImageError(.tooLarge, "the body is \(length) bytes, over the \(cap)-byte cap", context: ["url": url.absoluteString])
        }
        var bytes: [UInt8] = []
        for try await var chunk in response.body {
            guard ContinuousClock.now < deadline else {
                throw ImageError(.timeout, "the download took longer than \(configuration.totalTimeout)", context: ["url": url.absoluteString])
            }
            guard bytes.count + chunk.readableBytes <= cap else {
                throw ImageError(.tooLarge, "the body passed the \(cap)-byte cap while streaming", context: ["url": url.absoluteString])
            }
            bytes += chunk.readBytes(length: chunk.readableBytes) ?? []
        }
        let contentType = response.headers.first(name: "content-type")
            .map { $0.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? "" }
        return .body(Download(bytes: bytes, contentType: contentType, finalURL: url.absoluteString, redirects: 0))
    }

    /// The URL and its host; only http and https with a host.
    static func parse(_ text: String) throws(ImageError) -> (URL, String) {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            var host = url.host, !host.isEmpty
        else {
            throw ImageError(.badURL, "only http and https URLs with a host are fetched", context: ["url": text])
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (url, host)
    }

    static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(max(1, seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
    }

    static func classify(_ error: any Error, url: String) -> ImageError {
        if let error = error as? ImageError { return error }
        let text = String(describing: error)
        let lowered = text.lowercased()
        if lowered.contains("timeout") || lowered.contains("deadline") || error is CancellationError {
            return ImageError(.timeout, "the download timed out: \(text)", context: ["url": url])
        }
        return ImageError(.connectFailed, "the download failed: \(text)", context: ["url": url])
    }
}
