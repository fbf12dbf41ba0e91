import DigestTesting
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// A bare HTTP/2 client over TLS that writes its streams' frames itself, at once, whatever the
/// server's SETTINGS: to see what the server does with streams beyond its limit.
final class RawHTTP2Connection: Sendable {
    struct Outcome: Sendable, CustomStringConvertible {
        var status: Int?
        var reset: HTTP2ErrorCode?
        var description: String { status.map(String.init) ?? "reset \(reset.map { "\($0)" } ?? "?")" }
    }

    private struct Seen {
        var outcomes: [Int32: Outcome] = [:]
        var finished: Set<Int32> = []
        var settings: [Int] = []
        var waiters: [Int32: CheckedContinuation<Void, Never>] = [:]

        /// The stream's answer is whole (or it was reset): its waiter goes on.
        mutating func finish(_ id: Int32) {
            finished.insert(id)
            waiters.removeValue(forKey: id)?.resume()
        }
    }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTP2Frame
        let seen = Mutex(Seen())

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            let id = Int32(frame.streamID)
            seen.withLock { seen in
                switch frame.payload {
                case .headers(let headers):
                    seen.outcomes[id, default: Outcome()].status = headers.headers.first(name: ":status").flatMap { Int($0) }
                    if headers.endStream { seen.finish(id) }
                case .data(let data):
                    if data.endStream { seen.finish(id) }
                case .rstStream(let code):
                    seen.outcomes[id, default: Outcome()].reset = code
                    seen.finish(id)
                case .settings(.settings(let settings)):
                    for setting in settings where setting.parameter == .maxConcurrentStreams { seen.settings.append(setting.value) }
                default:
                    break
                }
            }
        }
    }

    private let channel: any Channel
    private let collector: Collector
    private let nextStream = Mutex<Int32>(1)

    private init(channel: any Channel, collector: Collector) {
        self.channel = channel
        self.collector = collector
    }

    static func connect(to server: FakeAPNsServer) async throws -> RawHTTP2Connection {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(server.certificatePath)]
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let collector = Collector()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: nil))
                    try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client))
                    try channel.pipeline.syncOperations.addHandler(collector)
                }
            }
            .connect(host: "127.0.0.1", port: server.port).get()
        return RawHTTP2Connection(channel: channel, collector: collector)
    }

    var maxConcurrentStreamsSeen: [Int] { collector.seen.withLock { $0.settings } }

    /// Writes `count` requests at once (one flush) and waits for each one's answer or reset.
    func send(count: Int, authorization: String) async throws -> [Outcome] {
        let ids: [Int32] = nextStream.withLock { next in
            let ids = (0..<count).map { next + 2 * Int32($0) }
            next += 2 * Int32(count)
            return ids
        }
        let body = #"{"aps":{"alert":"hello"}}"#
        try await channel.eventLoop.submit { [channel] in
            for (index, id) in ids.enumerated() {
                let headers: HPACKHeaders = [
                    ":method": "POST", ":scheme": "https", ":authority": "127.0.0.1", ":path": "/3/device/\(String(format: "%064lx", index + Int(id)))",
                    "authorization": "bearer \(authorization)", "apns-topic": "com.example.digest", "apns-push-type": "alert",
                    "content-length": String(body.utf8.count),
                ]
                channel.write(HTTP2Frame(streamID: HTTP2StreamID(id), payload: .headers(.init(headers: headers))), promise: nil)
                let buffer = channel.allocator.buffer(string: body)
                channel.write(HTTP2Frame(streamID: HTTP2StreamID(id), payload: .data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
            }
            channel.flush()
        }.get()
        for id in ids { await wait(for: id) }
        return collector.seen.withLock { seen in ids.map { seen.outcomes[$0] ?? Outcome() } }
    }

    func waitForSettings(count: Int) async throws {
        for _ in 0..<100 where maxConcurrentStreamsSeen.count < count { try await Task.sleep(for: .milliseconds(20)) }
    }

    private func wait(for id: Int32) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finished = collector.seen.withLock { seen in
                if seen.finished.contains(id) { return true }
                seen.waiters[id] = continuation
                return false
            }
            if finished { continuation.resume() }
        }
    }

    func close() async throws { try await channel.close() }
}
