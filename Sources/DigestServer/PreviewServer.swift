import DigestCore
package import DigestStore
import Foundation
package import Hummingbird
package import Logging

/// The editors' preview pages: search a user, pick a week, see every surface side by side with the
/// payload bytes against each budget and the rules that fired.
///
/// Routes: `GET /` (the page; `?user=ID&week=W&source=auto|outbox|computed` opens one reader's previews),
/// `GET /api/users?q=PREFIX`, `GET /api/preview?user=ID&week=W[&source=]` (with the week's report),
/// `GET /api/compare?user=ID&week=W` (with `--compare-templates`: what the old templates folder
/// changes in the reader's messages), `GET /api/test-devices` and `POST /api/test-send` (with
/// `--test-devices`: "Send to my device", in `PreviewServer+TestSend.swift`),
/// `GET /png/<hash>-<platform>-<state>.png`, `GET /healthz`. With a bearer token, every route wants
/// `Authorization: Bearer TOKEN` (or `?token=TOKEN`, which the page passes on to its requests).
/// Without one (a server on loopback), every route but `/healthz` wants a loopback `Host`
/// (``LoopbackHostMiddleware``).
///
/// ```swift
/// let server = PreviewServer(catalog: catalog, configuration: .init(port: 8080))
/// try await server.application().runService()
/// ```
package struct PreviewServer<Database: DigestDatabase>: Sendable {
    /// Where and how the server listens.
    package struct Configuration: Sendable {
        /// 127.0.0.1 unless a bearer token is set.
        package var host = "127.0.0.1"
        /// 0 picks a free port (see `onServerRunning`).
        package var port = 8080
        /// Required when `host` is not a loopback address.
        package var bearerToken: String?
        /// `serve --test-devices`: the devices the page's "Send to my device" sends to, and how; `nil`
        /// for none (the page then shows no such control).
        package var testSending: TestSending?

        package init(host: String = "127.0.0.1", port: Int = 8080, bearerToken: String? = nil) {
            self.host = host
            self.port = port
            self.bearerToken = bearerToken
        }

        /// Whether `host` is reachable only from this machine.
        package var isLoopback: Bool { isLoopbackHost(host) }
    }

    package let catalog: PreviewCatalog<Database>
    package let configuration: Configuration
    package let logger: Logger

    package init(catalog: PreviewCatalog<Database>, configuration: Configuration, logger: Logger = Logger(label: "digest.serve")) {
        self.catalog = catalog
        self.configuration = configuration
        self.logger = logger
    }

    /// The router with every route (and the token check when a token is set).
    package func router() -> Router<BasicRequestContext> {
        let router = Router()
        if let token = configuration.bearerToken {
            router.add(middleware: BearerTokenMiddleware(token: token))
        } else {
            router.add(middleware: LoopbackHostMiddleware())
        }
        let catalog = self.catalog
        router.get("/") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: PreviewPageHTML.page)))
        }
        router.get("healthz") { _, _ in "ok\n" }
        router.get("api/users") { request, _ in
            let query = request.uri.queryParameters["q"].map(String.init) ?? ""
            try Self.check(query, name: "q", allowEmpty: true)
            return try Self.json(try await catalog.users(prefix: query))
        }
        router.get("api/compare") { request, _ in
            let (user, week) = try Self.userAndWeek(request, catalog: catalog)
            guard catalog.configuration.compareTemplatesDirectory != nil else {
                throw HTTPError(.notFound, message: "the server compares no templates (serve --compare-templates OLD_DIR)")
            }
            let page: ComparisonPage?
            do {
                page = try await catalog.comparison(userID: user, week: week)
            } catch let error as TemplateError {
                throw HTTPError(.internalServerError, message: "templates: \(error)")
            }
            guard let page else { throw HTTPError(.notFound, message: "no user '\(user)'") }
            return try Self.json(page)
        }
        router.get("api/preview") { request, _ in
            let parameters = request.uri.queryParameters
            let (user, week) = try Self.userAndWeek(request, catalog: catalog)
            var source: UserMessages.Source?
            if let text = parameters["source"].map(String.init), !text.isEmpty, text != "auto" {
                guard let value = UserMessages.Source(rawValue: text) else {
                    throw HTTPError(.badRequest, message: "source takes auto, outbox or computed")
                }
                source = value
            }
            guard let page = try await catalog.preview(userID: user, week: week, source: source) else {
                throw HTTPError(.notFound, message: "no user '\(user)'")
            }
            return try Self.json(page)
        }
        addTestSendRoutes(to: router)
        router.get("png/:name") { _, context in
            let file = context.parameters.get("name") ?? ""
            guard file.hasSuffix(".png"), file.count < 200 else { throw HTTPError(.badRequest, message: "not a PNG name") }
            guard let png = try await catalog.png(named: String(file.dropLast(4))) else {
                throw HTTPError(.notFound, message: "no such preview (reload the page to render it again)")
            }
            return Response(
                status: .ok, headers: [.contentType: "image/png", .cacheControl: "private, max-age=3600"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: png)))
        }
        return router
    }

    /// The server as a Hummingbird application (a `Service`: run it with `runService()` or in a
    /// `ServiceGroup`, which shuts it down gracefully on SIGTERM).
    package func application(
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        Application(
            router: router(),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "digest"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
    }

    /// Serves until SIGTERM or SIGINT, then shuts down gracefully.
    package func run(onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        try await application(onServerRunning: onServerRunning).runService()
    }

    /// `?user=` (required) and `?week=` (default: the latest complete week) of a request.
    static func userAndWeek(_ request: Request, catalog: PreviewCatalog<Database>) throws -> (String, ISOWeek) {
        let parameters = request.uri.queryParameters
        guard let user = parameters["user"].map(String.init) else {
            throw HTTPError(.badRequest, message: "user is required")
        }
        try check(user, name: "user", allowEmpty: false)
        if let text = parameters["week"].map(String.init), !text.isEmpty {
            do { return (user, try ISOWeek(parsing: text)) } catch { throw HTTPError(.badRequest, message: "week: \(error)") }
        }
        return (user, WeekCalendar.latestCompleteWeek(now: catalog.now()))
    }

    static func json(_ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }

    /// Refuses parameters no user id or prefix looks like.
    static func check(_ value: String, name: String, allowEmpty: Bool) throws {
        if value.isEmpty && !allowEmpty { throw HTTPError(.badRequest, message: "\(name) is empty") }
        if value.utf8.count > 200 { throw HTTPError(.badRequest, message: "\(name) is too long") }
        if value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw HTTPError(.badRequest, message: "\(name) holds control characters")
        }
    }
}

/// On a server without a bearer token (one listening on loopback only), answers only requests whose
/// `Host` is a loopback name or address (`127.0.0.1`, `localhost`, `[::1]`, a port or not), 403
/// otherwise; `/healthz` answers any. A page of another site whose name it made resolve to
/// 127.0.0.1 (DNS rebinding) is its own origin to the browser, so it could read the readers' data
/// from the preview routes, but its requests carry its own name as `Host`. A request without a
/// `Host` (HTTP/1.0) is no browser's and passes.
struct LoopbackHostMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if let authority = request.requestedHost, !isLoopback(authority: authority), request.uri.path != "/healthz" {
            throw HTTPError(
                .forbidden,
                message: "a server without --token answers only pages opened at 127.0.0.1, localhost or [::1] (Host \(authority.prefix(80))); behind a proxy or under another name, start it with --token")
        }
        return try await next(request, context)
    }
}

extension Request {
    /// The name (and port) the request was sent to: HTTP/2's `:authority` or HTTP/1.1's `Host`.
    var requestedHost: String? {
        head.authority ?? headers.first { $0.name.canonicalName == "host" }?.value
    }
}

/// Whether a `Host` value (a name or address, a port perhaps) is this machine's loopback.
func isLoopback(authority: String) -> Bool {
    var host = Substring(authority.lowercased())
    var port: Substring = ""
    if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
        port = host[host.index(after: close)...]
        host = host[host.index(after: host.startIndex)..<close]
    } else if let colon = host.lastIndex(of: ":") {
        port = host[colon...]
        host = host[..<colon]
    }
    let portIsDigits = port.isEmpty || (port.first == ":" && port.count <= 6 && port.dropFirst().allSatisfy { $0.isASCII && $0.isNumber })
    return portIsDigits && isLoopbackHost(String(host))
}

/// Whether `host` (a name or address, no port) is this machine's loopback: `localhost`, `::1` or an
/// IPv4 address in 127.0.0.0/8, written as one (`127.0.0.1.example.com` is a name like any other).
func isLoopbackHost(_ host: String) -> Bool {
    let host = host.lowercased()
    if host == "localhost" || host == "::1" { return true }
    let parts = host.split(separator: ".", omittingEmptySubsequences: false)
    return parts.count == 4 && parts[0] == "127"
        && parts.allSatisfy { part in part.count <= 3 && UInt8(part) != nil }
}

/// Wants `Authorization: Bearer TOKEN` or `?token=TOKEN` on every request.
struct BearerTokenMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let header = request.headers[.authorization].flatMap { value in
            value.hasPrefix("Bearer ") ? String(value.dropFirst(7)) : nil
        }
        let query = request.uri.queryParameters["token"].map(String.init)
        guard [header, query].contains(where: { $0.map(matches) ?? false }) else {
            var headers = HTTPFields()
            headers[.wwwAuthenticate] = "Bearer"
            throw HTTPError(.unauthorized, headers: headers, message: "a bearer token is required")
        }
        return try await next(request, context)
    }

    /// Compares in time independent of where the strings differ.
    func matches(_ candidate: String) -> Bool {
        let a = Array(candidate.utf8)
        let b = Array(token.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
