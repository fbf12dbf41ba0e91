import DigestStore
package import Foundation

/// What to do with a message after one APNs try (docs/007-rules-and-limits.md, "APNs answers and
/// what the sender does").
package enum APNsVerdict: Sendable, Hashable {
    /// Accepted: the `apns-id` (the answer's, else the request's; empty without either).
    case sent(apnsID: String)
    /// Try again, no sooner than `after` (a `Retry-After`, scaled; nil: the backoff decides).
    case retry(after: Duration?, code: String, detail: String)
    /// The device token is dead since `diedAt` (Unix seconds; nil: now). `suspectEnvironment`: it may
    /// only be a token of the other environment (`BadDeviceToken`).
    case deviceDead(code: String, detail: String, diedAt: Int64?, suspectEnvironment: Bool)
    /// This message can never be delivered; the device stays.
    case messageDead(code: String, detail: String)
    /// 403 `ExpiredProviderToken`: renew the provider token if it may be, and try again.
    case renewToken(detail: String)
    /// A refusal no retry fixes (the key, the team, the topic, the endpoint): stop the sender.
    /// `advice` says what to check.
    case stop(SenderError.Code, code: String, advice: String)
}

/// Reads APNs answers (Apple, "Handling notification responses from APNs") into verdicts. Pure.
package enum APNsResponse {
    /// The APNs answers table: `status`, the answer's `apns-id` and `Retry-After`, and its body
    /// (`{"reason":"…","timestamp":ms}` on errors); `requestID` is the `apns-id` the request carried.
    package static func classify(
        status: Int, apnsID: String?, requestID: String?, retryAfter: String?, body: [UInt8], policy: RetryPolicy, now: Date
    ) -> APNsVerdict {
        if (200..<300).contains(status) { return .sent(apnsID: apnsID ?? requestID ?? "") }
        let json = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        let reason = (json?["reason"] as? String).map { String($0.prefix(100)) }
        let code = reason ?? "HTTP_\(status)"
        let detail = "APNs answered \(status)"
        let serverDelay = retryAfter.flatMap { FCMResponse.parseRetryAfter($0, now: now) }.map(policy.scaled)

        switch (status, reason) {
        case (400, "BadDeviceToken"):
            return .deviceDead(code: code, detail: "\(detail): the token is not a device token of this endpoint's environment", diedAt: nil, suspectEnvironment: true)
        case (410, _):
            // Unregistered, ExpiredToken: invalid since `timestamp` (ms); Apple delays the answer on purpose.
            let milliseconds = (json?["timestamp"] as? NSNumber)?.int64Value
            let diedAt = milliseconds.map { $0 / 1000 }
            let since = diedAt.map { ", inactive since \(Timestamp.format($0))" } ?? ""
            return .deviceDead(code: code, detail: detail + since, diedAt: diedAt, suspectEnvironment: false)
        case (403, "ExpiredProviderToken"):
            return .renewToken(detail: detail)
        case (403, _):
            // InvalidProviderToken, MissingProviderToken, BadCertificate, BadCertificateEnvironment, Forbidden.
            return .stop(.authentication, code: code, advice: "check --apns-key-id, --apns-team-id and the key file: an APNs key of that team, not revoked")
        case (400, "BadTopic"), (400, "TopicDisallowed"), (400, "MissingTopic"):
            return .stop(.configuration, code: code, advice: "check --apns-topic (the app's bundle id) and the devices' topics: apps of the key's team")
        case (404, _), (405, _):
            // BadPath, MethodNotAllowed: the URL is wrong for every message.
            return .stop(.configuration, code: code, advice: "check --apns-endpoint")
        case (400, "IdleTimeout"):
            return .retry(after: serverDelay, code: code, detail: detail)
        case (400, "DeviceTokenNotForTopic"):
            // The device belongs to another app than the topic: this message is wrong, the device is not dead.
            return .messageDead(code: code, detail: "\(detail): the device belongs to another app than the message's apns-topic")
        case (400, _), (413, _):
            // PayloadTooLarge, BadCollapseId, BadExpirationDate, BadMessageId, BadPriority, PayloadEmpty…
            return .messageDead(code: code, detail: detail)
        case (429, _), (500...599, _):
            // TooManyRequests (one device), TooManyProviderTokenUpdates (never renewed on it),
            // InternalServerError, ServiceUnavailable, Shutdown.
            return .retry(after: serverDelay, code: code, detail: detail)
        default:
            // An answer APNs does not give: taken as a failure of the network between.
            return .retry(after: serverDelay, code: code, detail: detail)
        }
    }
}
