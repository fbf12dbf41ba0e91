import ArgumentParser
import AsyncHTTPClient
import DigestCore
import DigestSender
import DigestStore
import Foundation
import Logging

/// The credentials and endpoints of each provider: `digest send`'s flags, which `send-test` and
/// `serve --test-devices` take too (same names, same meaning).
struct ProviderOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "The Google service-account JSON key file, or `metadata`. Default: $DIGEST_CREDENTIALS, else $GOOGLE_APPLICATION_CREDENTIALS.",
        discussion: """
            `metadata`: tokens of the machine's default service account from the GCE/GKE metadata server \
            (metadata.google.internal, or $GCE_METADATA_HOST as HOST[:PORT]); only when asked, never probed. \
            A file named metadata: ./metadata.
            """,
        valueName: "file|metadata"))
    var credentials: String?

    /// `--credentials`, else `DIGEST_CREDENTIALS`, else `GOOGLE_APPLICATION_CREDENTIALS` (a path only).
    var credentialsChoice: CredentialsChoice? {
        let environment = ProcessInfo.processInfo.environment
        if let chosen = credentials ?? environment["DIGEST_CREDENTIALS"] {
            return chosen == "metadata" ? .metadata : .file(chosen)
        }
        return environment["GOOGLE_APPLICATION_CREDENTIALS"].map(CredentialsChoice.file)
    }

    @Option(help: "The Firebase project to send for. Default: the key's project_id, or the metadata server's project.")
    var project: String?

    @Option(help: "FCM's base URL.")
    var endpoint = "https://fcm.googleapis.com"

    @Option(help: "A PEM file of extra trusted CA certificates, for every provider (a private or test endpoint).")
    var caFile: String?

    @Option(help: ArgumentHelp("The APNs signing key: the .p8 file Apple's developer account gives (Keys, Apple Push Notifications service).", valueName: "AuthKey.p8"))
    var apnsKeyFile: String?

    @Option(name: .customLong("apns-key-id"), help: "The APNs key's id (10 characters, in the key's name AuthKey_<id>.p8).")
    var apnsKeyID: String?

    @Option(name: .customLong("apns-team-id"), help: "The Apple developer team id the key belongs to (10 characters).")
    var apnsTeamID: String?

    @Option(help: "apns-topic, the app's bundle id, of the messages whose device names no topic of its own.")
    var apnsTopic: String?

    @Option(help: "APNs' base URL: production; the sandbox (apps built for development) is https://api.sandbox.push.apple.com.")
    var apnsEndpoint = "https://api.push.apple.com"

    @Option(help: ArgumentHelp("The VAPID key Web Push requests are signed with: PKCS#8 or SEC1 PEM (`digest webpush keygen` makes one).", valueName: "vapid.pem"))
    var vapidKeyFile: String?

    @Option(help: ArgumentHelp("The VAPID contact the push services' operators can reach: mailto:ADDRESS or an https: URL.", valueName: "mailto:…"))
    var vapidSubject: String?

    @Option(help: ArgumentHelp(
        "More push-service hosts Web Push may contact beside the browsers' (fcm.googleapis.com, updates.push.services.mozilla.com, web.push.apple.com, *.notify.windows.com): names or IP addresses, comma-separated.",
        discussion: "A private, loopback or link-local address is contacted only when it, or the name that resolves to it, is listed.",
        valueName: "HOST,…"))
    var allowPushHosts: String?

    /// FCM's base URL without a trailing slash.
    var fcmBaseURL: String { endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint }

    /// APNs' base URL without a trailing slash.
    var apnsBaseURL: String { apnsEndpoint.hasSuffix("/") ? String(apnsEndpoint.dropLast()) : apnsEndpoint }

    /// `--allow-push-hosts` as a list.
    var allowedPushHosts: [String] { (allowPushHosts ?? "").split(separator: ",").map(String.init) }

    /// Whether credentials for `provider` were given (not whether they work).
    func hasCredentials(for provider: Provider) -> Bool {
        switch provider {
        case .fcm: credentialsChoice != nil
        case .apns: apnsKeyFile != nil
        case .webpush: vapidKeyFile != nil
        }
    }

    func validate() throws {
        guard endpoint.hasPrefix("https://") || endpoint.hasPrefix("http://") else {
            throw ValidationError("--endpoint must be an http(s) URL")
        }
        guard apnsEndpoint.hasPrefix("https://") else { throw ValidationError("--apns-endpoint must be an https URL (APNs speaks HTTP/2 over TLS only)") }
        if apnsKeyFile == nil {
            let stray = [("--apns-key-id", apnsKeyID), ("--apns-team-id", apnsTeamID), ("--apns-topic", apnsTopic)].filter { $0.1 != nil }
            if let first = stray.first { throw ValidationError("\(first.0) needs --apns-key-file (the .p8 key APNs requests are signed with)") }
        } else {
            guard apnsKeyID != nil, apnsTeamID != nil else {
                throw ValidationError("--apns-key-file needs --apns-key-id (the key's 10-character id) and --apns-team-id (the team's)")
            }
        }
        if vapidKeyFile == nil {
            if vapidSubject != nil { throw ValidationError("--vapid-subject needs --vapid-key-file (the key Web Push requests are signed with)") }
        } else {
            guard vapidSubject != nil else {
                throw ValidationError("--vapid-key-file needs --vapid-subject (mailto:ADDRESS or an https: URL the push services can reach you at)")
            }
        }
        if let apnsTopic, apnsTopic.isEmpty || apnsTopic.contains(where: \.isWhitespace) { throw ValidationError("--apns-topic must be a bundle id") }
        if let project, project.isEmpty || project.contains(where: { $0.isWhitespace || $0 == "/" }) {
            throw ValidationError("--project must be a project id")
        }
    }

    /// The APNs key `--apns-key-file` names, with its id and team (``validate()`` checked they
    /// come together); nil without it.
    func apnsSigningKey() throws -> APNsSigningKey? {
        guard let apnsKeyFile, let apnsKeyID, let apnsTeamID else { return nil }
        return try APNsSigningKey(contentsOf: apnsKeyFile, keyID: apnsKeyID, teamID: apnsTeamID)
    }

    /// The token source `--credentials` asked for, and the project: `--project`, else the key's or
    /// the metadata server's.
    func tokens(
        account: ServiceAccount?, client: HTTPClient, metadataClient: HTTPClient?, logger: Logger
    ) async throws -> (AccessTokenProvider, String) {
        let configuration = AccessTokenProvider.Configuration()
        if let account {
            return (try AccessTokenProvider(account: account, client: client, configuration: configuration, logger: logger), project ?? account.projectID)
        }
        let source = try MetadataServerTokenSource(
            host: MetadataServerTokenSource.host(environment: ProcessInfo.processInfo.environment), client: metadataClient!)
        let projectID: String
        if let project {
            projectID = project
        } else {
            projectID = try await retryingTransientFailures(attempts: configuration.attempts, pause: configuration.retryPause, logger: logger) {
                () async throws(SenderError) -> String in try await source.projectID(timeout: configuration.timeout)
            }
        }
        return (AccessTokenProvider(source: source, configuration: configuration, logger: logger), projectID)
    }
}

/// Where `digest send` gets its access tokens.
enum CredentialsChoice: Equatable {
    /// A service-account JSON key.
    case file(String)
    /// The GCE/GKE metadata server.
    case metadata
}

