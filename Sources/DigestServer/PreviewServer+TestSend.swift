import DigestCore
import Foundation
import Hummingbird
import Logging

/// The "Send to my device" routes (`serve --test-devices`): `GET /api/test-devices` lists the test
/// devices with their tokens masked (`[]` without any); `POST /api/test-send` with the JSON body
/// `{"user", "week", "device"}` sends that reader's digest to that device through
/// ``Configuration/testSending`` and answers `{"sent": true, "message_id", "variant", "source", "device"}`,
/// or an error: 400 bad input, 403 another site's request, 404 an unknown device or reader, 415 a body
/// that is not `application/json`, 429 too many sends, 502 the provider refused, 503 no credentials.
///
/// A page of another site cannot make a browser send the POST: a request it may send without asking
/// (a form, a `text/plain` fetch) is not `application/json`, a request it would have to ask for first
/// (CORS preflight) is never allowed (the server answers no `OPTIONS`), and a browser's `Origin`
/// must name the host the request went to.
extension PreviewServer {
    /// The body of a test send.
    struct TestSendBody: Decodable {
        var user: String
        var week: String?
        var device: String
    }

    func addTestSendRoutes(to router: Router<BasicRequestContext>) {
        let sending = configuration.testSending
        let configuration = self.configuration
        let catalog = self.catalog
        let logger = self.logger
        router.get("api/test-devices") { _, _ in try Self.json(sending?.devices ?? []) }
        router.post("api/test-send") { request, _ in
            guard let sending else {
                throw HTTPError(.notFound, message: "the server has no test devices (serve --test-devices FILE)")
            }
            try Self.checkSameSite(request)
            let body = try await request.body.collect(upTo: 4096)
            let asked: TestSendBody
            do { asked = try JSONDecoder().decode(TestSendBody.self, from: Data(body.readableBytesView)) } catch {
                throw HTTPError(.badRequest, message: #"the body must be {"user": ID, "week": "YYYY-Www", "device": NAME}"#)
            }
            try Self.check(asked.user, name: "user", allowEmpty: false)
            try Self.check(asked.device, name: "device", allowEmpty: false)
            let week: ISOWeek
            if let text = asked.week, !text.isEmpty {
                do { week = try ISOWeek(parsing: text) } catch { throw HTTPError(.badRequest, message: "week: \(error)") }
            } else {
                week = WeekCalendar.latestCompleteWeek(now: catalog.now())
            }
            do {
                let result = try await sending.send(
                    TestSending.Request(
                        user: asked.user, week: week, device: asked.device, templates: try catalog.templates.catalog(),
                        planning: catalog.configuration.planning(week)))
                logger.info(
                    "test send",
                    metadata: ["digest.user_id": "\(asked.user)", "digest.device": "\(asked.device)", "digest.message_id": "\(result.messageID)"])
                return try Self.json(result)
            } catch let error as TestSendError {
                throw HTTPError(error.code.status, message: error.message)
            } catch let error as HTTPError {
                throw error
            } catch {
                logger.error("test send failed", metadata: ["digest.device": "\(asked.device)", "error": "\(error)"])
                throw HTTPError(.internalServerError, message: "test send failed: \(error)")
            }
        }
    }

    /// Refuses a POST another site's page could have made a browser send: one whose body is not
    /// declared `application/json` (415), or whose `Origin` names another host than the request's
    /// `Host` (or `X-Forwarded-Host`, behind a proxy) (403). (DNS rebinding, a page of another site
    /// whose name resolves to 127.0.0.1 and so is its own origin, is refused on every route of a
    /// server without a token by ``LoopbackHostMiddleware``.)
    static func checkSameSite(_ request: Request) throws {
        let mediaType = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard mediaType == "application/json" else {
            throw HTTPError(.unsupportedMediaType, message: "a test send's body must be sent as Content-Type: application/json")
        }
        let authority = request.requestedHost
        guard let origin = request.headers[.origin] else { return }
        let forwarded = request.headers.first { $0.name.canonicalName == "x-forwarded-host" }?.value
        let hosts = [authority, forwarded].compactMap { $0?.lowercased() }
        let originHost = origin.lowercased().split(separator: "://", maxSplits: 1).dropFirst().first.map(String.init)
        guard let originHost, hosts.contains(originHost) else {
            throw HTTPError(.forbidden, message: "a test send must come from this server's own page (Origin \(origin))")
        }
    }
}
