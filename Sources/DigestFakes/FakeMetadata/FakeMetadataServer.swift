import Foundation
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
package final class FakeMetadataServer: FakeHTTPService {
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
    private let http: FakeHTTPServer

    private init(projectID: String, tokenLifetime: Int64, http: FakeHTTPServer, onToken: @escaping @Sendable (String, Int64) -> Void) {
        self.projectID = projectID
        self.http = http
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
        let http = try FakeHTTPServer(tls: nil, selfSignedName: nil)
        let server = FakeMetadataServer(projectID: projectID, tokenLifetime: tokenLifetime, http: http, onToken: onToken)
        try await http.listen(for: server, host: "127.0.0.1", port: 0, connections: .init())
        return server
    }

    /// `127.0.0.1:PORT`: the value of `GCE_METADATA_HOST`.
    package var host: String { "127.0.0.1:\(http.port)" }

    package var stats: Stats { state.withLock { $0.stats } }

    /// The next token requests get `answers` in order, every later one `then`.
    package func scriptTokenAnswers(_ answers: [TokenAnswer], then: TokenAnswer = .token) {
        state.withLock {
            $0.script = answers
            $0.then = then
        }
    }

    package func shutdown() async throws { try await http.shutdown() }

    // MARK: Answers

    /// No request counts as in flight.
    func counts(_ request: FakeRequest) -> Bool { false }

    func reply(to request: FakeRequest, on _: inout Void) -> FakeReply {
        let (method, path) = (request.method, request.path)
        let flavor = request.headers.first { HeaderName.folded($0.0) == "metadata-flavor" }?.1
        guard flavor == "Google" else {
            state.withLock { $0.stats.unflavored += 1 }
            return Self.answer(403, contentType: "text/html", body: "Missing Metadata-Flavor:Google header.")
        }
        switch (method, path) {
        case ("GET", "/computeMetadata/v1/project/project-id"):
            state.withLock { $0.stats.projectRequests += 1 }
            return Self.answer(200, contentType: "application/text", body: projectID)
        case ("GET", "/computeMetadata/v1/instance/service-accounts/default/token"):
            return tokenReply()
        default:
            return Self.answer(404, contentType: "text/html", body: "Not Found")
        }
    }

    /// An answer with `Metadata-Flavor: Google` unless it is an impostor's.
    private static func answer(_ status: Int, flavored: Bool = true, contentType: String, body: String) -> FakeReply {
        .answer(status: status, headers: [("Content-Type", contentType)] + (flavored ? [("Metadata-Flavor", "Google")] : []), body: body, delay: 0)
    }

    private func tokenReply() -> FakeReply {
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
            return Self.answer(200, flavored: answer == .token, contentType: "application/json", body: json)
        case .status(let status):
            return Self.answer(status, contentType: "text/plain", body: "fake metadata server: HTTP \(status)")
        case .drop:
            return .drop(delay: 0)
        }
    }
}
