import NIOCore
import NIOHTTP1

/// One HTTP/1.1 connection of a fake service (``FakeHTTPService``): collects a request, asks the
/// service for the reply, writes it (after the injected delay) or drops the connection.
final class FakeHTTP1Handler<Service: FakeHTTPService>: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let service: Service
    private let server: FakeHTTPServer
    private var connection: Service.ConnectionState
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var bodyLength = 0

    init(service: Service, server: FakeHTTPServer) {
        self.service = service
        self.server = server
        self.connection = service.newConnection()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.removeAll(keepingCapacity: true)
            bodyLength = 0
        case .body(var buffer):
            bodyLength += buffer.readableBytes
            if body.count + buffer.readableBytes <= FakeRequest.maxKeptBody { body += buffer.readBytes(length: buffer.readableBytes) ?? [] }
        case .end:
            guard let head else { return }
            self.head = nil
            let request = FakeRequest(
                method: head.method.rawValue, path: FakeRequest.path(head.uri), headers: head.headers.map { ($0.name, $0.value) }, body: body,
                bodyLength: bodyLength, http2: head.version.major == 2)
            let counted = service.counts(request)
            if counted { server.began() }
            let reply = service.reply(to: request, on: &connection)
            let keepAlive = head.isKeepAlive
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            let server = self.server
            let respond: @Sendable () -> Void = {
                let context = bound.value
                if counted { server.answered() }
                switch reply {
                case .drop:
                    context.close(promise: nil)
                case .answer(let status, let headers, let text, _):
                    var responseHeaders = HTTPHeaders(headers)
                    let buffer = context.channel.allocator.buffer(string: text)
                    responseHeaders.replaceOrAdd(name: "Content-Length", value: String(buffer.readableBytes))
                    if !keepAlive { responseHeaders.replaceOrAdd(name: "Connection", value: "close") }
                    context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: head.version, status: HTTPResponseStatus(statusCode: status), headers: responseHeaders))), promise: nil)
                    context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil)
                    let done = context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)))
                    if !keepAlive { done.whenComplete { _ in bound.value.close(promise: nil) } }
                }
            }
            let delay = reply.delay
            if delay > 0 {
                context.eventLoop.scheduleTask(in: .milliseconds(Int64(delay)), respond)
            } else {
                respond()
            }
        }
    }
}
