/// A fake provider served by ``FakeHTTP1Handler`` (HTTP/1.1) and ``FakeHTTP2Handler`` (HTTP/2 at the
/// frame level): it answers whole requests, counts the ones in flight and hears of connections. The
/// fake FCM and the fake Web Push service are such services.
protocol FakeHTTPService: AnyObject, Sendable {
    /// The answer to one whole request (`http2`: it came over HTTP/2).
    func reply(method: String, path: String, headers: [(String, String)], body: [UInt8], http2: Bool) -> FakeReply
    /// Whether a request to `path` counts as in flight until ``answered()`` (a push, not `/stats`).
    func counts(path: String) -> Bool
    /// A counted request's answer was written (or dropped).
    func answered()
    /// An HTTP/2 connection opened; `goAway` makes it send GOAWAY.
    func connectionOpened(_ id: ObjectIdentifier, goAway: @escaping @Sendable () -> Void)
    func connectionClosed(_ id: ObjectIdentifier)
    /// A GOAWAY was sent.
    func countGoAway()
}

/// What a fake service answers: a status with headers and a body, or nothing (the connection, on
/// HTTP/2 the stream, is dropped); each after `delay` milliseconds.
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
