import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A fake GCE/GKE metadata server on loopback, answering as Google's does:
/// `GET /computeMetadata/v1/instance/service-accounts/default/token` (a JSON access token) and
/// `GET /computeMetadata/v1/project/project-id` (text), only with `Metadata-Flavor: Google` (403
/// without), every answer carrying `Metadata-Flavor: Google`. Token requests can be scripted to fail.
///
/// ```swift
/// let fcm = try await FakeFCMServer.start()
/// let metadata = try await FakeMetadataServer.start(projectID: fcm.projectID) { fcm.registerAccessToken($0, lifetime: $1) }
/// // GCE_METADATA_HOST=\(metadata.host) digest send --credentials metadata --endpoint \(fcm.url) …
/// try await metadata.shutdown()
/// ```
package final class FakeMetadataServer: Sendable {
    /// How a token request is answered.
    package enum TokenAnswer: Sendable, Hashable {
        /// A new token, valid for the server's token lifetime.
        case token
        /// That HTTP status with a short text body (404: no service account; 503: failing).
        case status(Int)
        /// The connection closed without an answer.
        case drop
        /// A token without `Metadata-Flavor: Google`: something that is not a metadata server.
        case impostor
    }

    /// What the server saw.
    package struct Stats: Sendable, Hashable {
        package var tokenRequests = 0
        package var projectRequests = 0
        /// Requests without `Metadata-Flavor: Google` (answered 403).
        package var unflavored = 0
        /// Tokens handed out.
        package var tokensIssued = 0
    }

    private struct State {
        var script: [TokenAnswer] = []
        var then: TokenAnswer = .token
        var stats = Stats()
    }

    package let projectID: String
    /// The lifetime (`expires_in`) of the tokens it issues, seconds.
    private let tokenLifetime: Int64
    private let onToken: @Sendable (String, Int64) -> Void
    private let state: Mutex<State>
    private let channel: Mutex<(any Channel)?> = Mutex(nil)
    private let boundPort = Atomic<Int>(0)

    private init(projectID: String, tokenLifetime: Int64, onToken: @escaping @Sendable (String, Int64) -> Void) {
        self.projectID = projectID
        self.tokenLifetime = tokenLifetime
        self.onToken = onToken
        self.state = Mutex(State())
    }

    /// Starts a server on a free loopback port; `onToken` learns each token issued and its lifetime
    /// (hand it to ``FakeFCMServer/registerAccessToken(_:lifetime:)``).
    package static func start(
        projectID: String = "digest-test", tokenLifetime: Int64 = 3599,
        onToken: @escaping @Sendable (String, Int64) -> Void = { _, _ in }
    ) async throws -> FakeMetadataServer {
        let server = FakeMetadataServer(projectID: projectID, tokenLifetime: tokenLifetime, onToken: onToken)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(FakeMetadataHandler(server: server))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        server.channel.withLock { $0 = channel }
        server.boundPort.store(channel.localAddress?.port ?? 0, ordering: .releasing)
        return server
    }

    /// `127.0.0.1:PORT`: the value of `GCE_METADATA_HOST`.
    package var host: String { "127.0.0.1:\(boundPort.load(ordering: .acquiring))" }

    package var stats: Stats { state.withLock { $0.stats } }

    /// The next token requests get `answers` in order, every later one `then`.
    package func scriptTokenAnswers(_ answers: [TokenAnswer], then: TokenAnswer = .token) {
        state.withLock {
            $0.script = answers
            $0.then = then
        }
    }

    package func shutdown() async throws {
        let channel = self.channel.withLock { $0 }
        try await channel?.close()
    }

    // MARK: Answers

    enum Reply {
        case answer(status: Int, flavored: Bool, contentType: String, body: String)
        case drop
    }

    func reply(method: String, path: String, flavor: String?) -> Reply {
        guard flavor == "Google" else {
            state.withLock { $0.stats.unflavored += 1 }
            return .answer(status: 403, flavored: true, contentType: "text/html", body: "Missing Metadata-Flavor:Google header.")
        }
        switch (method, path) {
        case ("GET", "/computeMetadata/v1/project/project-id"):
            state.withLock { $0.stats.projectRequests += 1 }
            return .answer(status: 200, flavored: true, contentType: "application/text", body: projectID)
        case ("GET", "/computeMetadata/v1/instance/service-accounts/default/token"):
            return tokenReply()
        default:
            return .answer(status: 404, flavored: true, contentType: "text/html", body: "Not Found")
        }
    }

    private func tokenReply() -> Reply {
        let lifetime = tokenLifetime
        let (answer, issued): (TokenAnswer, Int) = state.withLock { state in
            state.stats.tokenRequests += 1
            let answer = state.script.isEmpty ? state.then : state.script.removeFirst()
            if answer == .token || answer == .impostor { state.stats.tokensIssued += 1 }
            return (answer, state.stats.tokensIssued)
        }
        switch answer {
        case .token, .impostor:
            let token = "ya29.metadata-\(issued)-" + UUID().uuidString.prefix(8).lowercased()
            onToken(token, lifetime)
            let json = #"{"access_token":"\#(token)","expires_in":\#(lifetime),"token_type":"Bearer"}"#
            return .answer(status: 200, flavored: answer == .token, contentType: "application/json", body: json)
        case .status(let status):
            return .answer(status: status, flavored: true, contentType: "text/plain", body: "fake metadata server: HTTP \(status)")
        case .drop:
            return .drop
        }
    }
}

/// One connection of the fake metadata server.
final class FakeMetadataHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let server: FakeMetadataServer
    private var head: HTTPRequestHead?

    init(server: FakeMetadataServer) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            self.head = nil
            let path = String(head.uri.split(separator: "?", maxSplits: 1).first ?? "")
            switch server.reply(method: head.method.rawValue, path: path, flavor: head.headers.first(name: "Metadata-Flavor")) {
            case .drop:
                context.close(promise: nil)
            case .answer(let status, let flavored, let contentType, let text):
                var headers = HTTPHeaders([("Content-Type", contentType)])
                if flavored { headers.add(name: "Metadata-Flavor", value: "Google") }
                let buffer = context.channel.allocator.buffer(string: text)
                headers.add(name: "Content-Length", value: String(buffer.readableBytes))
                if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: HTTPResponseStatus(statusCode: status), headers: headers))), promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
                let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
                if !head.isKeepAlive {
                    let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                    done.whenComplete { _ in bound.value.close(promise: nil) }
                }
            }
        }
    }
}
