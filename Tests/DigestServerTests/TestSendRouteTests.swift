import DigestCore
import DigestSQLite
import DigestTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

@testable import DigestServer

/// "Send to my device" in-process: the routes with a stand-in for the sending (the `digest` command's,
/// tried end to end in `ServeTestSendTests`): what they refuse before sending, and how they answer.
@Suite struct TestSendRouteTests {
    /// What the stand-in was asked, and what it answers next.
    final class StandIn: Sendable {
        let asked = Mutex<[String]>([])
        let failure = Mutex<TestSendError?>(nil)

        var sending: TestSending {
            TestSending(devices: [
                .init(name: "Ana's Pixel", provider: .fcm, platform: .android, target: "…Xk9Q"),
                .init(name: "Ana's iPhone", provider: .apns, platform: .ios, target: "…e8f9", unavailable: "no APNs credentials"),
            ]) { request in
                self.asked.withLock { $0.append("\(request.user) \(request.week) \(request.device)") }
                if let failure = self.failure.withLock({ $0 }) { throw failure }
                return .init(messageID: String(repeating: "a", count: 32), variant: "BigText", source: .outbox, device: request.device, receipt: nil)
            }
        }
    }

    static func server(_ database: SQLiteDatabase, sending: TestSending?, host: String = "127.0.0.1", token: String? = nil) -> PreviewServer<SQLiteDatabase> {
        let server = PreviewServerTests.server(database, token: token)
        var configuration = server.configuration
        configuration.host = host
        configuration.testSending = sending
        return PreviewServer(catalog: server.catalog, configuration: configuration, logger: server.logger)
    }

    static let json: HTTPFields = [.contentType: "application/json"]

    static func body(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    @Test func theDevicesAreListedMaskedAndASendAnswersItsMessageID() async throws {
        let dir = try TemporaryDirectory()
        let standIn = StandIn()
        let app = Application(router: Self.server(try await FixtureDatabase.make(in: dir), sending: standIn.sending).router())
        try await app.test(.router) { client in
            try await client.execute(uri: "/api/test-devices", method: .get) { response in
                #expect(response.status == .ok)
                let devices = try #require(try PreviewServerTests.json(response.body) as? [[String: Any]])
                #expect(devices.map { $0["name"] as? String } == ["Ana's Pixel", "Ana's iPhone"])
                #expect(devices.map { $0["target"] as? String } == ["…Xk9Q", "…e8f9"])
                #expect(devices.map { $0["provider"] as? String } == ["fcm", "apns"])
                #expect(devices[1]["unavailable"] as? String == "no APNs credentials" && devices[0]["unavailable"] == nil)
            }
            let body = Self.body(#"{"user": "u-pl", "week": "2026-W46", "device": "Ana's Pixel"}"#)
            try await client.execute(uri: "/api/test-send", method: .post, headers: [.contentType: "application/json; charset=utf-8"], body: body) { response in
                #expect(response.status == .ok)
                let result = try #require(try PreviewServerTests.json(response.body) as? [String: Any])
                #expect(result["sent"] as? Bool == true && result["message_id"] as? String == String(repeating: "a", count: 32))
                #expect(result["source"] as? String == "outbox" && result["device"] as? String == "Ana's Pixel" && result["variant"] as? String == "BigText")
            }
            // No week: the latest complete week of the catalog's clock.
            try await client.execute(uri: "/api/test-send", method: .post, headers: Self.json, body: Self.body(#"{"user": "u-zh", "device": "Ana's Pixel"}"#)) {
                #expect($0.status == .ok)
            }
            // The page's own request: its Origin is the server's (the test client's Host is localhost).
            var headers = Self.json
            headers[.origin] = "http://localhost"
            try await client.execute(uri: "/api/test-send", method: .post, headers: headers, body: Self.body(#"{"user": "u-zh", "device": "Ana's Pixel"}"#)) {
                #expect($0.status == .ok)
            }
        }
        let latest = WeekCalendar.latestCompleteWeek(now: FixtureDatabase.now)
        #expect(standIn.asked.withLock { $0 } == ["u-pl 2026-W46 Ana's Pixel"] + Array(repeating: "u-zh \(latest) Ana's Pixel", count: 2))
    }

    /// A request another site's page could make a browser send is refused before anything is sent:
    /// a body not declared JSON (a form, a `text/plain` fetch), or an `Origin` of another host.
    @Test func crossSiteRequestsAndBadInputAreRefusedBeforeSending() async throws {
        let dir = try TemporaryDirectory()
        let standIn = StandIn()
        let app = Application(router: Self.server(try await FixtureDatabase.make(in: dir), sending: standIn.sending).router())
        let good = #"{"user": "u-pl", "week": "2026-W46", "device": "Ana's Pixel"}"#
        let cases: [(HTTPFields, String, HTTPResponse.Status)] = [
            ([:], good, .unsupportedMediaType),
            ([.contentType: "text/plain"], good, .unsupportedMediaType),
            ([.contentType: "application/x-www-form-urlencoded"], "user=u-pl&device=Ana", .unsupportedMediaType),
            ([.contentType: "application/json", .origin: "https://evil.example"], good, .forbidden),
            ([.contentType: "application/json", .origin: "null"], good, .forbidden),
            (Self.json, "user=u-pl", .badRequest),
            (Self.json, #"{"user": "u-pl"}"#, .badRequest),
            (Self.json, #"{"user": "", "device": "Ana's Pixel"}"#, .badRequest),
            (Self.json, #"{"user": "u-pl", "device": ""}"#, .badRequest),
            (Self.json, #"{"user": "u-pl", "week": "2026-W99", "device": "Ana's Pixel"}"#, .badRequest),
            (Self.json, #"{"user": "u\u0001", "device": "Ana's Pixel"}"#, .badRequest),
        ]
        try await app.test(.router) { client in
            for (headers, body, status) in cases {
                try await client.execute(uri: "/api/test-send", method: .post, headers: headers, body: Self.body(body)) { response in
                    #expect(response.status == status, "\(headers) \(body)")
                }
            }
            // The preflight a cross-site JSON POST needs first is not answered.
            try await client.execute(uri: "/api/test-send", method: .options, headers: [.origin: "https://evil.example"]) { response in
                #expect(response.status != .ok && response.headers[.accessControlAllowOrigin] == nil)
            }
        }
        #expect(standIn.asked.withLock { $0 }.isEmpty)
    }

    /// A test send's `Origin` must name the host the request went to (or, behind a proxy, the one
    /// it forwarded); a request without one (not a browser's page) passes.
    @Test(arguments: [
        ("127.0.0.1:8080", "http://127.0.0.1:8080", true), ("localhost:8080", "http://LOCALHOST:8080", true), ("[::1]:8080", "http://[::1]:8080", true),
        ("127.0.0.1:8080", nil, true), ("127.0.0.1:8080", "http://evil.example", false), ("127.0.0.1:8080", "http://127.0.0.1:9090", false),
        ("127.0.0.1:8080", "null", false),
    ])
    func anotherOriginIsRefused(host: String, origin: String?, allowed: Bool) throws {
        var fields: HTTPFields = [.contentType: "application/json"]
        if let origin { fields[.origin] = origin }
        let request = Request(head: .init(method: .post, scheme: "http", authority: host, path: "/api/test-send", headerFields: fields), body: .init(buffer: ByteBuffer()))
        if allowed {
            #expect(throws: Never.self) { try PreviewServer<SQLiteDatabase>.checkSameSite(request) }
        } else {
            let error = #expect(throws: HTTPError.self) { try PreviewServer<SQLiteDatabase>.checkSameSite(request) }
            #expect(error?.status == .forbidden)
        }
    }

    /// The status of one request over a connection of its own, naming `host` as its `Host` (and
    /// as the `Origin` of its page).
    static func status(_ port: Int, _ uri: String, _ method: HTTPRequest.Method, host: String, body: ByteBuffer? = nil) async throws -> HTTPResponse.Status {
        let client = TestClient(host: "127.0.0.1", port: port)
        client.connect()
        var headers = Self.json
        headers[.origin] = "http://\(host)"
        do {
            let status = try await client.execute(.init(uri, method: method, authority: host, headers: headers, body: body)).status
            try await client.shutdown()
            return status
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// DNS rebinding: another site's name made to resolve to 127.0.0.1 is same-origin for its own
    /// page, so the browser would let it read every route; but its requests name it as `Host`. A
    /// server without a token answers on every route but `/healthz` only a loopback `Host`; with a
    /// token, the token decides. Over real HTTP, each request naming its own `Host`.
    @Test func aPageOfAnotherNameIsRefusedWithoutAToken() async throws {
        let dir = try TemporaryDirectory()
        let database = try await FixtureDatabase.make(in: dir)
        let standIn = StandIn()
        let send = Self.body(#"{"user": "u-pl", "week": "2026-W46", "device": "Ana's Pixel"}"#)
        let routes: [(String, HTTPRequest.Method, ByteBuffer?)] = [
            ("/", .get, nil), ("/api/users?q=u", .get, nil), ("/api/preview?user=u-pl&week=2026-W46", .get, nil),
            ("/api/test-devices", .get, nil), ("/api/test-send", .post, send),
        ]
        try await LiveServer.with(Self.server(database, sending: standIn.sending)) { port in
            for host in ["evil.example:\(port)", "evil.example", "127.0.0.1.evil.example:\(port)", "localhost.evil.example:\(port)", "127.0.0.1:\(port).evil.example"] {
                for (uri, method, body) in routes {
                    let status = try await Self.status(port, uri, method, host: host, body: body)
                    #expect(status == .forbidden, "\(host) \(uri)")
                }
                let health = try await Self.status(port, "/healthz", .get, host: host)
                #expect(health == .ok, "\(host)")
            }
            for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST", "[::1]:\(port)", "127.0.0.2:\(port)"] {
                let status = try await Self.status(port, "/api/users?q=u", .get, host: host)
                #expect(status == .ok, "\(host)")
            }
            let sent = try await Self.status(port, "/api/test-send", .post, host: "127.0.0.1:\(port)", body: send)
            #expect(sent == .ok)
        }
        #expect(standIn.asked.withLock { $0 }.count == 1)
        let tokened = Self.server(database, sending: standIn.sending, token: "s3cret")
        try await LiveServer.with(tokened) { port in
            let without = try await Self.status(port, "/api/users?q=u", .get, host: "preview.example.com")
            let with = try await Self.status(port, "/api/users?q=u&token=s3cret", .get, host: "preview.example.com")
            #expect(without == .unauthorized && with == .ok)
        }
    }

    @Test(arguments: [
        (TestSendError.Code.unknownDevice, HTTPResponse.Status.notFound), (.unknownUser, .notFound), (.noMessage, .notFound),
        (.tooMany, .tooManyRequests), (.refused, .badGateway), (.unavailable, .serviceUnavailable),
    ])
    func aRefusalAnswersItsStatusAndMessage(code: TestSendError.Code, status: HTTPResponse.Status) async throws {
        let dir = try TemporaryDirectory()
        let standIn = StandIn()
        standIn.failure.withLock { $0 = TestSendError(code, "why: \(code)") }
        let app = Application(router: Self.server(try await FixtureDatabase.make(in: dir), sending: standIn.sending).router())
        try await app.test(.router) { client in
            let body = Self.body(#"{"user": "u-pl", "week": "2026-W46", "device": "Ana's Pixel"}"#)
            try await client.execute(uri: "/api/test-send", method: .post, headers: Self.json, body: body) { response in
                #expect(response.status == status)
                let answer = try #require(try PreviewServerTests.json(response.body) as? [String: Any])
                #expect((answer["error"] as? [String: Any])?["message"] as? String == "why: \(code)")
            }
        }
    }

    /// Without test devices the page lists none and a send is not found; off loopback, the routes want
    /// the bearer token like every other.
    @Test func noDevicesNoSendsAndTheTokenOffLoopback() async throws {
        let dir = try TemporaryDirectory()
        let database = try await FixtureDatabase.make(in: dir)
        let body = #"{"user": "u-pl", "week": "2026-W46", "device": "Ana's Pixel"}"#
        try await Application(router: Self.server(database, sending: nil).router()).test(.router) { client in
            try await client.execute(uri: "/api/test-devices", method: .get) { response in
                #expect(response.status == .ok && String(buffer: response.body) == "[]")
            }
            try await client.execute(uri: "/api/test-send", method: .post, headers: Self.json, body: Self.body(body)) { #expect($0.status == .notFound) }
        }
        let standIn = StandIn()
        let remote = Self.server(database, sending: standIn.sending, host: "0.0.0.0", token: "s3cret")
        #expect(!remote.configuration.isLoopback)
        try await Application(router: remote.router()).test(.router) { client in
            try await client.execute(uri: "/api/test-devices", method: .get) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/api/test-send", method: .post, headers: Self.json, body: Self.body(body)) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/api/test-send?token=s3cret", method: .post, headers: Self.json, body: Self.body(body)) { #expect($0.status == .ok) }
        }
        #expect(standIn.asked.withLock { $0 }.count == 1)
    }
}
