import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// What the fake services (FCM, APNs, Web Push, the metadata server) share: the listening channel on
/// `host:port` (0: any free port), with TLS (given, or a self-signed certificate made for it) and HTTP/2
/// (``FakeHTTP2Handler``) or HTTP/1.1 (``FakeHTTP1Handler``) as ALPN decides, or HTTP/1.1 without
/// TLS; its HTTP/2 connections (to send GOAWAY, to close at shutdown); the requests in flight; what its
/// connections saw (``Counts``); and the shutdown that closes it all.
///
/// A fake makes one (``init(tls:selfSignedName:)``), keeps it, and has it ``listen(for:host:port:connections:)``
/// once the fake exists.
final class FakeHTTPServer: Sendable {
    /// How the HTTP/2 connections keep to a number of streams.
    enum StreamLimit: Sendable {
        /// Advertised in the first SETTINGS and kept by NIO (FCM, Web Push).
        case fixed(Int)
        /// APNs's: one stream until a request on the connection is answered 200, then this many (a new
        /// SETTINGS says so). The handler refuses a stream beyond what it advertised with
        /// REFUSED_STREAM and the connection stays (RFC 9113 §5.1.2), where NIO would close it: NIO is
        /// told a limit it never reaches (``unenforcedStreamLimit``), and ``MaxConcurrentStreamsRewriter``
        /// writes the advertised one into the SETTINGS the client reads.
        case oneUntilFirstSuccess(then: Int)
    }

    /// How the connections behave.
    struct Connections: Sendable {
        /// HTTP/1.1 offered beside HTTP/2 (by ALPN over TLS; without TLS, HTTP/1.1 alone). False: HTTP/2
        /// alone, whatever the client offers (APNs).
        var http1 = true
        /// HTTP/2 offered over TLS; false: HTTP/1.1 alone, whatever the certificate's `applicationProtocols`
        /// say (a Web Push service without HTTP/2).
        var http2 = true
        /// How many streams an HTTP/2 connection may have open (FCM's 100 unless told).
        var streams: StreamLimit = .fixed(100)
        /// A dropped request closes its connection (APNs), rather than resetting its stream.
        var dropClosesConnection = false
        /// Answer header fields kept out of both sides' HPACK tables: a value new in every answer
        /// (APNs's `apns-id`) would push the others out.
        var unindexedHeaders: Set<String> = []
    }

    /// What the connections saw.
    struct Counts: Sendable, Hashable {
        /// HTTP/2 connections opened.
        var connections = 0
        /// Most HTTP/2 connections open at once.
        var mostConnections = 0
        /// GOAWAY frames sent.
        var goAways = 0
        /// Streams refused for going beyond the advertised SETTINGS_MAX_CONCURRENT_STREAMS.
        var refusedStreams = 0
        /// Most streams open at once on one connection.
        var mostStreams = 0
        /// Most of the service's own requests (``FakeHTTPService/counts(_:)``) waiting for their answer at once.
        var mostInFlight = 0
    }

    /// An open HTTP/2 connection's ways to send GOAWAY and to close.
    struct Connection: Sendable {
        var goAway: @Sendable () -> Void
        var close: @Sendable () -> Void
    }

    enum StartError: Error, CustomStringConvertible {
        case noCertificate
        var description: String { "no TLS certificate given and none could be made (is the openssl program installed?)" }
    }

    private struct State {
        var channel: (any Channel)?
        var connections: [ObjectIdentifier: Connection] = [:]
        var counts = Counts()
        var inFlight = 0
    }

    /// The SETTINGS_MAX_CONCURRENT_STREAMS NIO is told under ``StreamLimit/oneUntilFirstSuccess(then:)``.
    static let unenforcedStreamLimit = 1 << 30

    /// The certificate and key served (nil: plain HTTP/1.1).
    let tls: FakeFCMServer.TLS?
    private let generatedDirectory: String?
    private let state = Mutex(State())
    private let boundPort = Atomic<Int>(0)

    /// `tls`: the certificate and key to serve, with the ALPN protocols to offer. Without them,
    /// `selfSignedName` makes a self-signed certificate for 127.0.0.1 and localhost offering `h2` and
    /// `http/1.1` (in a temporary directory named after it, removed at shutdown); nil serves plain HTTP/1.1.
    init(tls: FakeFCMServer.TLS?, selfSignedName: String?) throws {
        guard tls == nil, let selfSignedName else {
            self.tls = tls
            self.generatedDirectory = nil
            return
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(selfSignedName)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        guard let made = try TestCertificate.make(in: directory) else {
            try? FileManager.default.removeItem(at: directory)
            throw StartError.noCertificate
        }
        self.tls = made
        self.generatedDirectory = directory.path
    }

    /// The port it listens on.
    var port: Int { boundPort.load(ordering: .acquiring) }

    /// Starts listening on `host:port` (0: any free port) for `service`.
    func listen<Service: FakeHTTPService>(for service: Service, host: String, port: Int, connections: Connections) async throws {
        do {
            let channel = try await bind(service, host: host, port: port, connections: connections)
            state.withLock { $0.channel = channel }
            boundPort.store(channel.localAddress?.port ?? port, ordering: .releasing)
        } catch {
            if let generatedDirectory { try? FileManager.default.removeItem(atPath: generatedDirectory) }
            throw error
        }
    }

    /// Stops listening, closes the HTTP/2 connections and removes a certificate it made.
    func shutdown() async throws {
        let (channel, open) = state.withLock { ($0.channel, Array($0.connections.values)) }
        try await channel?.close()
        for connection in open { connection.close() }
        if let generatedDirectory { try? FileManager.default.removeItem(atPath: generatedDirectory) }
    }

    /// Sends GOAWAY on every open HTTP/2 connection: each answers the streams opened so far and no
    /// other, then closes.
    func goAway() {
        for connection in state.withLock({ Array($0.connections.values) }) { connection.goAway() }
    }

    var counts: Counts { state.withLock { $0.counts } }

    /// `stats` with what the connections saw.
    func report(_ stats: FakeStats) -> FakeStats {
        let counts = self.counts
        var stats = stats
        stats.maxInFlight = counts.mostInFlight
        (stats.connections, stats.maxConnections) = (counts.connections, counts.mostConnections)
        (stats.http2Connections, stats.maxHTTP2Connections) = (counts.connections, counts.mostConnections)
        stats.refusedStreams = counts.refusedStreams
        stats.maxStreamsUsed = counts.mostStreams
        stats.goAways = counts.goAways
        return stats
    }

    /// The service's own requests received and not yet answered.
    var inFlight: Int { state.withLock { $0.inFlight } }

    // MARK: The handlers' calls

    func opened(_ id: ObjectIdentifier, _ connection: Connection) {
        state.withLock { state in
            state.connections[id] = connection
            state.counts.connections += 1
            state.counts.mostConnections = max(state.counts.mostConnections, state.connections.count)
        }
    }

    func closed(_ id: ObjectIdentifier) { _ = state.withLock { $0.connections.removeValue(forKey: id) } }

    func wentAway() { state.withLock { $0.counts.goAways += 1 } }

    func refusedStream() { state.withLock { $0.counts.refusedStreams += 1 } }

    func streamsOpen(_ count: Int) { state.withLock { $0.counts.mostStreams = max($0.counts.mostStreams, count) } }

    /// One of the service's own requests came in…
    func began() {
        state.withLock { state in
            state.inFlight += 1
            state.counts.mostInFlight = max(state.counts.mostInFlight, state.inFlight)
        }
    }

    /// …and its answer was written (or it was dropped).
    func answered() { state.withLock { $0.inFlight -= 1 } }

    // MARK: Listening

    private func bind<Service: FakeHTTPService>(
        _ service: Service, host: String, port: Int, connections: Connections
    ) async throws -> any Channel {
        let sslContext = try tls.map { tls in
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(tls.certificatePath).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: tls.privateKeyPath, format: .pem)))
            configuration.applicationProtocols = switch (connections.http1, connections.http2) {
            case (true, true): tls.applicationProtocols
            case (true, false): ["http/1.1"]
            case (false, _): ["h2"]
            }
            return try NIOSSLContext(configuration: configuration)
        }
        let advertised: Int, raised: Int?
        switch connections.streams {
        case .fixed(let limit): (advertised, raised) = (max(1, limit), nil)
        case .oneUntilFirstSuccess(let limit): (advertised, raised) = (Self.unenforcedStreamLimit, max(1, limit))
        }
        var http2 = NIOHTTP2Handler.ConnectionConfiguration()
        http2.initialSettings = nioDefaultSettings.filter { $0.parameter != .maxConcurrentStreams }
            + [HTTP2Setting(parameter: .maxConcurrentStreams, value: advertised)]
        let configuration = http2
        let server = self
        /// The HTTP/2 pipeline after TLS.
        @Sendable func addHTTP2(_ channel: any Channel) throws {
            let sync = channel.pipeline.syncOperations
            if let raised { try sync.addHandler(MaxConcurrentStreamsRewriter(raisedLimit: raised)) }
            try sync.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: configuration, streamConfiguration: .init()))
            try sync.addHandler(FakeHTTP2Handler(service: service, server: server, connections: connections, raisedLimit: raised))
        }
        @Sendable func addHTTP1(_ channel: any Channel) throws {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
            try channel.pipeline.syncOperations.addHandler(FakeHTTP1Handler(service: service, server: server))
        }
        return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 1024)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                guard let sslContext else { return channel.eventLoop.makeCompletedFuture { try addHTTP1(channel) } }
                let secured = channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                }
                guard connections.http1 else { return secured.flatMapThrowing { try addHTTP2(channel) } }
                return secured.flatMap {
                    channel.configureHTTP2SecureUpgrade { channel in
                        channel.eventLoop.makeCompletedFuture { try addHTTP2(channel) }
                    } http1ChannelConfigurator: { channel in
                        channel.eventLoop.makeCompletedFuture { try addHTTP1(channel) }
                    }
                }
            }
            .bind(host: host, port: port).get()
    }
}
