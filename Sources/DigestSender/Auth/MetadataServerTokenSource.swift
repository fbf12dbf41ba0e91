public import AsyncHTTPClient
import Foundation
public import Logging
public import NIOCore
import NIOHTTP1
import NIOPosix

/// Access tokens of the instance's default service account from the GCE/GKE metadata server
/// (`digest send --credentials metadata`): `GET http://HOST/computeMetadata/v1/instance/service-accounts/default/token`
/// with `Metadata-Flavor: Google`. Also reads the instance's project id.
///
/// A machine without a metadata server fails at once: give it a client made with
/// ``AsyncHTTPClient/HTTPClient/Configuration/metadataServer(connectTimeout:)``, which does not
/// retry a connection that could not be made. Errors:
/// - nothing listens at the host, its name does not resolve, or the connection is not made within
///   the connect timeout; something that is not a metadata server answers; the instance has no
///   service account (404) or the server refuses (other 4xx): ``SenderError/Code-swift.struct/credentials``
///   (exit 78: a restart fails the same way);
/// - connected, then no answer in time, 429 or 5xx: ``SenderError/Code-swift.struct/unavailable``
///   (retried by ``AccessTokenProvider``, then exit 75).
///
/// ```swift
/// let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .metadataServer())
/// let source = try MetadataServerTokenSource(host: MetadataServerTokenSource.host(environment: ProcessInfo.processInfo.environment), client: client)
/// let tokens = AccessTokenProvider(source: source, logger: logger)
/// ```
public struct MetadataServerTokenSource: AccessTokenSource {
    /// The metadata server's name on Compute Engine and GKE.
    public static let defaultHost = "metadata.google.internal"
    /// The variable Google's client libraries read to reach another metadata server (`HOST[:PORT]`).
    public static let hostVariable = "GCE_METADATA_HOST"

    /// `HOST` or `HOST:PORT`, no scheme.
    public let host: String
    private let client: HTTPClient

    /// `host` is a name or address with an optional port, without a scheme or path.
    public init(host: String = defaultHost, client: HTTPClient) throws(SenderError) {
        guard !host.isEmpty, !host.contains("/"), !host.contains(where: \.isWhitespace), !host.contains("@"),
              URL(string: "http://\(host)/")?.host != nil
        else {
            throw SenderError(.configuration, "the metadata server's host must be HOST or HOST:PORT, without a scheme or path", context: host)
        }
        self.host = host
        self.client = client
    }

    /// ``hostVariable`` from `environment` when set and not empty, else ``defaultHost``.
    public static func host(environment: [String: String]) -> String {
        environment[hostVariable].flatMap { $0.isEmpty ? nil : $0 } ?? defaultHost
    }

    public var principal: String { "the default service account of the metadata server at \(host)" }

    public func fetchToken(timeout: TimeAmount, logger: Logger) async throws(SenderError) -> AccessToken {
        let (url, body) = try await get("instance/service-accounts/default/token", what: "an access token", timeout: timeout)
        let json = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any] ?? [:]
        guard let token = json["access_token"] as? String, !token.isEmpty else {
            throw SenderError(.credentials, "the metadata server's answer holds no access_token", context: url)
        }
        let lifetime = (json["expires_in"] as? NSNumber)?.int64Value ?? 0
        guard lifetime > 0 else {
            throw SenderError(.unavailable, "the metadata server answered a token with no time left (expires_in \(lifetime))", context: url)
        }
        logger.debug("fetched an access token from the metadata server", metadata: ["expires_in": "\(lifetime)"])
        return AccessToken(value: token, lifetime: lifetime)
    }

    /// The project the instance belongs to (`project/project-id`): one try, errors as for tokens.
    public func projectID(timeout: TimeAmount) async throws(SenderError) -> String {
        let (url, body) = try await get("project/project-id", what: "the project id", timeout: timeout)
        let id = String(buffer: body).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !id.isEmpty, id.count <= 100, !id.contains(where: { $0.isWhitespace || $0 == "/" }) else {
            throw SenderError(.credentials, "the metadata server's project id is not a project id", context: url)
        }
        return id
    }

    /// GETs `computeMetadata/v1/PATH`: the URL and the body of a 200 from a metadata server.
    private func get(_ path: String, what: String, timeout: TimeAmount) async throws(SenderError) -> (String, ByteBuffer) {
        let url = "http://\(host)/computeMetadata/v1/\(path)"
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Metadata-Flavor", value: "Google")
        let status: UInt
        let flavor: String?
        let body: ByteBuffer
        do {
            let response = try await client.execute(request, timeout: timeout)
            status = response.status.code
            flavor = response.headers.first(name: "Metadata-Flavor")
            body = try await response.body.collect(upTo: 64 << 10)
        } catch {
            if Self.neverConnected(error) {
                throw SenderError(
                    .credentials,
                    "no metadata server answers at \(host) (\(error)); `--credentials metadata` works on Compute Engine, GKE and Cloud Run: elsewhere pass a service-account key with --credentials FILE",
                    context: url)
            }
            throw SenderError(.unavailable, "the metadata server did not answer for \(what): \(error)", context: url)
        }
        guard flavor == "Google" else {
            throw SenderError(.credentials, "what answered at \(host) is not a Google metadata server (HTTP \(status) without Metadata-Flavor: Google)", context: url)
        }
        switch status {
        case 200:
            return (url, body)
        case 429, 500...:
            throw SenderError(.unavailable, "the metadata server is failing (HTTP \(status)\(Self.excerpt(body)))", context: url)
        case 404 where path.hasPrefix("instance/service-accounts/"):
            throw SenderError(
                .credentials,
                "the metadata server has no default service account for this machine (HTTP 404\(Self.excerpt(body))): attach one to the instance, or on GKE bind the pod's Kubernetes service account with Workload Identity",
                context: url)
        default:
            throw SenderError(.credentials, "the metadata server refused \(what) (HTTP \(status)\(Self.excerpt(body)))", context: url)
        }
    }

    /// Whether `error` means no connection was made: nothing listens, the name does not resolve, or
    /// the connect timed out. Anything later means a server is there.
    static func neverConnected(_ error: any Error) -> Bool {
        if error is NIOConnectionError { return true }
        // A refused or unroutable connect, as the socket reports it.
        if let error = error as? IOError, [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH].contains(error.errnoCode) { return true }
        if let error = error as? HTTPClientError, error == .connectTimeout { return true }
        if let error = error as? ChannelError, case .connectTimeout = error { return true }
        return false
    }

    /// `: first line of the body`, at most 200 characters, or nothing.
    private static func excerpt(_ body: ByteBuffer) -> String {
        let line = String(buffer: body).split(whereSeparator: \.isNewline).first.map { String($0.prefix(200)) } ?? ""
        return line.isEmpty ? "" : ": \(line)"
    }
}

extension HTTPClient.Configuration {
    /// A client for the metadata server: plain HTTP/1.1, no proxy, no redirects, a connection made
    /// within `connectTimeout` or the request fails at once (no retried connects), so a machine
    /// without a metadata server finds out in one try.
    public static func metadataServer(connectTimeout: TimeAmount = .seconds(2)) -> Self {
        var configuration = HTTPClient.Configuration()
        configuration.httpVersion = .http1Only
        configuration.timeout = .init(connect: connectTimeout)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.redirectConfiguration = .disallow
        configuration.proxy = nil
        return configuration
    }
}
