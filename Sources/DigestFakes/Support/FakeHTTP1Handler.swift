import NIOCore
import NIOHTTP1

/// One HTTP/1.1 connection of a fake service (``FakeHTTPService``): collects a request, asks the
/// service for the reply, writes it (after the injected delay) or drops the connection.
final class FakeHTTP1Handler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let server: any FakeHTTPService
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(server: any FakeHTTPService) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.removeAll(keepingCapacity: true)
        case .body(var buffer):
            if body.count + buffer.readableBytes <= 1 << 20 { body += buffer.readBytes(length: buffer.readableBytes) ?? [] }
        case .end:
            guard let head else { return }
            self.head = nil
            let path = String(head.uri.split(separator: "?", maxSplits: 1).first ?? "")
            let isSend = server.counts(path: path)
            let reply = server.reply(method: head.method.rawValue, path: path, headers: head.headers.map { ($0.name, $0.value) }, body: body,
                                     http2: head.version.major == 2)
            let keepAlive = head.isKeepAlive
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            let server = self.server
            let respond: @Sendable () -> Void = {
                let context = bound.value
                if isSend { server.answered() }
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
