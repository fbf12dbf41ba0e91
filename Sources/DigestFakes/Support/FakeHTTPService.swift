/// A fake provider served by ``FakeHTTPServer`` (``FakeHTTP1Handler`` for HTTP/1.1,
/// ``FakeHTTP2Handler`` for HTTP/2 at the frame level): it answers whole requests. The fake FCM, the
/// fake APNs, the fake Web Push service and the fake metadata server are such services.
protocol FakeHTTPService: AnyObject, Sendable {
    /// What one connection keeps from one request to the next (the fake APNs: the provider tokens it
    /// took, as Apple limits their updates per connection); `Void` for a service that keeps nothing.
    associatedtype ConnectionState = Void
    /// The state of a connection just opened.
    func newConnection() -> ConnectionState
    /// Whether `request` is one of the service's own (a push; not `/stats`): those count as in flight
    /// until answered.
    func counts(_ request: FakeRequest) -> Bool
    /// The answer to one whole request, which came over `connection`.
    func reply(to request: FakeRequest, on connection: inout ConnectionState) -> FakeReply
}

extension FakeHTTPService where ConnectionState == Void {
    func newConnection() {}
}

/// One whole request, as a fake service reads it.
struct FakeRequest {
    var method: String
    /// The path without its query.
    var path: String
    /// The header fields as sent (over HTTP/2 the names are lower-case, RFC 9113 8.2.1).
    var headers: [(String, String)]
    /// The body's first MiB.
    var body: [UInt8]
    /// The body's whole length (`body` holds fewer bytes past a MiB).
    var bodyLength: Int
    /// It came over HTTP/2.
    var http2: Bool

    /// The most of a body a handler keeps.
    static let maxKeptBody = 1 << 20

    /// `target` without its query.
    static func path(_ target: String) -> String {
        String(target.split(separator: "?", maxSplits: 1).first ?? "")
    }
}

/// What a fake service answers: a status with headers and a body, or nothing (the connection, on
/// HTTP/2 the stream or the connection as the server says, is dropped); each after `delay` milliseconds.
enum FakeReply {
    case answer(status: Int, headers: [(String, String)], body: String, delay: Int)
    case drop(delay: Int)

    var delay: Int {
        switch self {
        case .answer(_, _, _, let delay), .drop(let delay): delay
        }
    }
}

/// Header names as the fakes compare them.
enum HeaderName {
    /// `name` in lower case, folded only when it holds capitals (HTTP/2's never do, RFC 9113 8.2.1).
    static func folded(_ name: String) -> String {
        name.utf8.contains(where: { (0x41...0x5A).contains($0) }) ? name.lowercased() : name
    }
}
