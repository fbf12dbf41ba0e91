import DigestNIO
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A small HTTP/1.1 server on 127.0.0.1, port chosen by the system, serving a table of routes: the
/// demo serves its sample pictures with it, and the tests serve faults (slow bodies, redirect loops,
/// oversized bodies). One request per connection; every response closes the connection.
///
/// ```swift
/// let routes = LoopbackRoutes(["/a.jpg": .ok(jpeg, contentType: "image/jpeg")])
/// try await LoopbackHTTPServer.serve(routes) { server in
///     print(server.url("/a.jpg"))
/// }
/// ```
package struct LoopbackHTTPServer: Sendable {
    /// The port it listens on.
    package let port: Int

    /// `http://127.0.0.1:<port><path>`.
    package func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Starts the server, runs `body`, and stops the server (closing any connection still open).
    package static func serve<T: Sendable>(
        _ routes: LoopbackRoutes, _ body: (LoopbackHTTPServer) async throws -> T
    ) async throws -> T {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: child)
                }
            }
        let server = LoopbackHTTPServer(port: channel.channel.localAddress?.port ?? 0)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            // Accepting and answering run on the channels' event loops, not on the concurrency pool:
            // blocking work elsewhere in the process (a busy test run) cannot stall the answers.
            group.addTask(executorPreference: EventLoopExecutor(channel.channel.eventLoop)) {
                try? await channel.executeThenClose { inbound in
                    try await withThrowingDiscardingTaskGroup { connections in
                        for try await connection in inbound {
                            connections.addTask(executorPreference: EventLoopExecutor(connection.channel.eventLoop)) {
                                await Self.handle(connection, routes: routes)
                            }
                        }
                    }
                }
            }
            do {
                let result = try await body(server)
                group.cancelAll()
                channel.channel.close(promise: nil)
                return result
            } catch {
                group.cancelAll()
                channel.channel.close(promise: nil)
                throw error
            }
        }
    }

    private static func handle(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, routes: LoopbackRoutes) async {
        try? await connection.executeThenClose { inbound, outbound in
            var path: String?
            for try await part in inbound {
                switch part {
                case .head(let head): path = head.uri
                case .body: continue
                case .end:
                    let uri = path ?? "/"
                    let route = String(uri.split(separator: "?", maxSplits: 1).first ?? "/")
                    let response = routes.hit(route)
                    try await respond(response, outbound: outbound)
                    return
                }
            }
        }
    }

    private static func respond(_ response: LoopbackRoutes.Response, outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>) async throws {
        func head(_ status: Int, _ headers: [(String, String)]) -> HTTPServerResponsePart {
            var fields = HTTPHeaders(headers)
            fields.add(name: "Connection", value: "close")
            return .head(HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: fields))
        }
        func buffer(_ bytes: some Collection<UInt8>) -> HTTPServerResponsePart {
            .body(.byteBuffer(ByteBuffer(bytes: bytes)))
        }
        switch response {
        case .bytes(let status, let body, let contentType):
            var headers = [("Content-Length", "\(body.count)")]
            if let contentType { headers.append(("Content-Type", contentType)) }
            try await outbound.write(head(status, headers))
            if !body.isEmpty { try await outbound.write(buffer(body)) }
            try await outbound.write(.end(nil))
        case .redirect(let location, let status):
            try await outbound.write(head(status, [("Location", location), ("Content-Length", "0")]))
            try await outbound.write(.end(nil))
        case .trickle(let body, let contentType, let chunkSize, let interval):
            try await outbound.write(head(200, [("Content-Type", contentType), ("Content-Length", "\(body.count)")]))
            var offset = 0
            while offset < body.count {
                try await Task.sleep(for: interval)
                let end = min(body.count, offset + chunkSize)
                try await outbound.write(buffer(body[offset..<end]))
                offset = end
            }
            try await outbound.write(.end(nil))
        case .endless(let contentType, let declaredLength):
            var headers = [("Content-Type", contentType)]
            if let declaredLength { headers.append(("Content-Length", "\(declaredLength)")) }
            try await outbound.write(head(200, headers))
            let chunk = [UInt8](repeating: 0xAB, count: 64 * 1024)
            // Bounded: 64 MiB at most, and it stops when the client hangs up.
            for _ in 0..<1024 { try await outbound.write(buffer(chunk)) }
            try await outbound.write(.end(nil))
        }
    }
}

/// The routes a `LoopbackHTTPServer` serves, changeable while it runs, with a count of requests.
package final class LoopbackRoutes: Sendable {
    /// What a path answers.
    package enum Response: Sendable {
        /// A status with a body and a Content-Type (nil: no header).
        case bytes(status: Int, body: [UInt8], contentType: String?)
        /// A redirect to `location`.
        case redirect(location: String, status: Int)
        /// The body in chunks of `chunkSize`, one every `interval`.
        case trickle(body: [UInt8], contentType: String, chunkSize: Int, interval: Duration)
        /// A body of up to 64 MiB, with or without a Content-Length.
        case endless(contentType: String, declaredLength: Int?)

        package static func ok(_ body: [UInt8], contentType: String?) -> Response { .bytes(status: 200, body: body, contentType: contentType) }
    }

    private let table: Mutex<[String: Response]>
    private let counts = Mutex<[String: Int]>([:])

    package init(_ routes: [String: Response] = [:]) {
        table = Mutex(routes)
    }

    package subscript(path: String) -> Response? {
        get { table.withLock { $0[path] } }
        set { table.withLock { $0[path] = newValue } }
    }

    /// Requests per path so far.
    package var hits: [String: Int] { counts.withLock { $0 } }

    func hit(_ path: String) -> Response {
        counts.withLock { $0[path, default: 0] += 1 }
        return table.withLock { $0[path] } ?? .bytes(status: 404, body: Array("not found\n".utf8), contentType: "text/plain")
    }
}
