import NIOCore
import NIOHPACK

/// The server chose another protocol than HTTP/2: the request goes through the client instead.
struct NoHTTP2: Error {}

/// An exchange's own HTTP/2 connection: the current one, or the requests waiting while one is
/// opened. A connection that went away (GOAWAY, lost) keeps its open streams until they end and is
/// replaced for new requests. Confined to its event loop.
final class HTTP2ConnectionLane {
    private let connector: HTTP2Connector
    private let loop: any EventLoop
    private var connection: HTTP2Connection?
    /// Requests waiting for the connection being opened (nil: none being opened).
    private var connecting: [HTTP2Connection.Request]?
    /// The request headers for the latest access token.
    private var prepared: (token: String, headers: HPACKHeaders)?

    init(connector: HTTP2Connector, loop: any EventLoop) {
        self.connector = connector
        self.loop = loop
    }

    /// Starts a request on the connection, or queues it while one is opened (no deadline runs until
    /// it is written: waiting here is bounded by the connect timeout).
    func start(id: UInt64, _ outgoing: HTTP2Exchange.Outgoing, timeout: TimeAmount, continuation: UnsafeContinuation<HTTP2Exchange.Answer, any Error>) {
        let request = HTTP2Connection.Request(
            id: id, headers: headers(outgoing), body: outgoing.body, timeout: timeout, continuation: continuation)
        if let connection, connection.isAccepting { return connection.start(request) }
        connection = nil
        if connecting != nil {
            connecting!.append(request)
            return
        }
        connecting = [request]
        connector.connect(on: loop, requestTimeout: timeout).assumeIsolated().whenComplete { result in
            let waiting = self.connecting ?? []
            self.connecting = nil
            switch result {
            case .success(let connection?):
                self.connection = connection
                for request in waiting { connection.start(request) }
            case .success(nil):
                for request in waiting { request.continuation.resume(throwing: NoHTTP2()) }
            case .failure(let error):
                for request in waiting { request.continuation.resume(throwing: error) }
            }
        }
    }

    /// Stops the connection taking requests; it closes once its open streams end.
    func close() {
        connection?.closeWhenIdle()
        connection = nil
    }

    func cancel(_ id: UInt64) {
        if let index = connecting?.firstIndex(where: { $0.id == id }) {
            connecting!.remove(at: index).continuation.resume(throwing: CancellationError())
            return
        }
        connection?.cancel(id)
    }

    /// The request's headers: those of the connector's path prepared once per token; another path
    /// (APNs': the device's) and more headers, per request.
    private func headers(_ outgoing: HTTP2Exchange.Outgoing) -> HPACKHeaders {
        let length = String(outgoing.body.readableBytes)
        guard outgoing.path == nil && outgoing.headers.isEmpty else {
            var headers = HPACKHeaders()
            headers.reserveCapacity(7 + outgoing.headers.count)
            headers.add(name: ":method", value: "POST")
            headers.add(name: ":scheme", value: "https")
            headers.add(name: ":authority", value: connector.authority)
            // A value no other request repeats (APNs' path names the device, `apns-id` the message)
            // is sent literally, not indexed: it would only push reusable entries (the token, the
            // topic, the collapse id) out of both sides' HPACK tables.
            headers.add(name: ":path", value: outgoing.path ?? connector.path, indexing: .nonIndexable)
            headers.add(name: "authorization", value: outgoing.authorization ?? "bearer \(outgoing.token)")
            for (name, value) in outgoing.headers {
                headers.add(name: name, value: value, indexing: name == "apns-id" ? .nonIndexable : .indexable)
            }
            headers.add(name: "content-type", value: connector.contentType)
            headers.add(name: "content-length", value: length)
            return headers
        }
        var headers: HPACKHeaders
        if let prepared, prepared.token == outgoing.token {
            headers = prepared.headers
        } else {
            headers = HPACKHeaders([
                (":method", "POST"), (":scheme", "https"), (":authority", connector.authority), (":path", connector.path),
                ("authorization", "Bearer \(outgoing.token)"), ("content-type", connector.contentType),
            ])
            prepared = (outgoing.token, headers)
        }
        headers.add(name: "content-length", value: length)
        return headers
    }
}
