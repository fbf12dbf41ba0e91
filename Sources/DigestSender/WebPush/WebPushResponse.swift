import Foundation

/// A push service's answer to one Web Push request, read into what the sender does (RFC 8030 and
/// the push services' documented answers; docs/016-web-push.md, "Answers"). 401 and 403 are not
/// decided here: whether they mean a dead subscription or a refused key depends on the origin's
/// other answers (``WebPushOrigin``).
enum WebPushResponse: Equatable {
    /// 2xx: accepted; `receipt` is the answer's `Location` (the message at the push service), if any.
    case sent(receipt: String)
    /// 404, 410: the subscription is gone.
    case gone(code: String, detail: String)
    /// 413, 400 and any other 4xx: this message can never be delivered as it is.
    case messageDead(code: String, detail: String)
    /// 429, 5xx: try again, no sooner than `after` when the service said so.
    case retry(after: Duration?, code: String, detail: String)
    /// 401, 403: the VAPID token or key was refused.
    case refused(status: Int, detail: String)

    /// The answer `status` with its `Retry-After`, `Location` and body (read for a short reason:
    /// push services answer errors with a line or a JSON object; never echoed whole).
    static func classify(status: Int, location: String?, retryAfter: String?, body: [UInt8], origin: String, policy: RetryPolicy, now: Date) -> WebPushResponse {
        let serverDelay = retryAfter.flatMap { FCMResponse.parseRetryAfter($0, now: now) }.map(policy.scaled)
        let said = reason(body)
        switch status {
        case 200..<300:
            return .sent(receipt: String((location ?? "").prefix(200)))
        case 404:
            return .gone(code: "NOT_FOUND", detail: "\(origin) does not know the subscription (404)\(said)")
        case 410:
            return .gone(code: "GONE", detail: "\(origin) says the subscription has expired or was unsubscribed (410)\(said)")
        case 413:
            return .messageDead(code: "PAYLOAD_TOO_LARGE", detail: "\(origin) refused the message as too large (413)\(said)")
        case 429:
            return .retry(after: max(policy.scaled(policy.quotaMinimum), serverDelay ?? .zero), code: "TOO_MANY_REQUESTS", detail: "\(origin) asks to slow down (429)\(said)")
        case 500...599:
            return .retry(after: serverDelay, code: "HTTP_\(status)", detail: "\(origin) failed (\(status))\(said)")
        case 401, 403:
            return .refused(status: status, detail: said)
        case 400:
            return .messageDead(code: "BAD_REQUEST", detail: "\(origin) refused the request as malformed (400)\(said)")
        default:
            return .messageDead(code: "HTTP_\(status)", detail: "\(origin) answered \(status)\(said)")
        }
    }

    /// `: <what the body says>`, printable ASCII, at most 160 characters; empty for an empty body.
    static func reason(_ body: [UInt8]) -> String {
        var text = ""
        for byte in body.prefix(400) {
            if text.utf8.count >= 160 { break }
            switch byte {
            case 0x20...0x7E: text.append(Character(Unicode.Scalar(byte)))
            case 0x09, 0x0A, 0x0D: if !text.hasSuffix(" ") { text.append(" ") }
            default: continue
            }
        }
        text = text.trimmingCharacters(in: .whitespaces)
        return text.isEmpty ? "" : ": \(text)"
    }
}
