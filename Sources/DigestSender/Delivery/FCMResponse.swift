package import Foundation

/// What to do with a message after one try (docs/007-rules-and-limits.md, "FCM errors and what the sender does").
package enum FCMVerdict: Sendable, Hashable {
    /// Accepted: FCM's message name.
    case sent(name: String)
    /// Try again after `after`; `code` is FCM's error code (or `NETWORK`).
    case retry(after: Duration, code: String, detail: String)
    /// Never deliverable; `unregistered` when the token is dead and its device must be removed.
    case dead(code: String, detail: String, unregistered: Bool)
    /// The access token was refused (401 `UNAUTHENTICATED`): fetch a new one and try once more.
    case reauthenticate(detail: String)
    /// A configuration problem no retry fixes: stop the sender.
    case stop(SenderError.Code, code: String, detail: String)

    /// The error code recorded with the outcome (`last_error` starts with it; metrics use it).
    package var code: String {
        switch self {
        case .sent: "OK"
        case .retry(_, let code, _), .dead(let code, _, _), .stop(_, let code, _): code
        case .reauthenticate: "UNAUTHENTICATED"
        }
    }
}

/// Reads FCM HTTP v1 responses into verdicts. Pure: no I/O, the random source is injected.
package enum FCMResponse {
    /// The verdict for an HTTP answer to the `attempt`-th try of a message: ``classify(status:retryAfter:body:policy:now:)``
    /// with the backoff the sender's state machine adds to a retry.
    package static func verdict(
        status: Int, retryAfter: String?, body: [UInt8], attempt: Int, policy: RetryPolicy, now: Date,
        random: inout some RandomNumberGenerator
    ) -> FCMVerdict {
        let backoff = policy.backoff(attempt: attempt, using: &random)
        let verdict = classify(status: status, retryAfter: retryAfter, body: body, policy: policy, now: now)
        guard case .retry(let after, let code, let detail) = verdict else { return verdict }
        return .retry(after: max(after, backoff), code: code, detail: detail)
    }

    /// The FCM errors table: the verdict for an HTTP answer, a retry's delay being what FCM asks for
    /// (`Retry-After`, at least a minute for a quota error), scaled, without the backoff.
    package static func classify(status: Int, retryAfter: String?, body: [UInt8], policy: RetryPolicy, now: Date) -> FCMVerdict {
        if (200..<300).contains(status) {
            return .sent(name: successName(body))
        }
        let json = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        let error = json?["error"] as? [String: Any]
        let statusName = error?["status"] as? String
        let message = (error?["message"] as? String).map { String($0.prefix(300)) } ?? "HTTP \(status)"
        let fcmCode = (error?["details"] as? [[String: Any]])?
            .first { ($0["@type"] as? String)?.hasSuffix("google.firebase.fcm.v1.FcmError") == true }?["errorCode"] as? String
        let code = fcmCode ?? statusName ?? "HTTP_\(status)"
        let serverDelay = retryAfter.flatMap { parseRetryAfter($0, now: now) }.map { policy.scaled($0) } ?? .zero

        switch (code, status) {
        case ("UNREGISTERED", _):
            return .dead(code: code, detail: message, unregistered: true)
        case ("INVALID_ARGUMENT", _), ("SENDER_ID_MISMATCH", _):
            return .dead(code: code, detail: message, unregistered: false)
        case ("THIRD_PARTY_AUTH_ERROR", _):
            return .stop(.thirdPartyAuth, code: code, detail: message)
        case ("QUOTA_EXCEEDED", _), (_, 429):
            return .retry(after: max(policy.scaled(policy.quotaMinimum), serverDelay), code: fcmCode ?? "QUOTA_EXCEEDED", detail: message)
        case ("UNAVAILABLE", _), ("INTERNAL", _), (_, 500...599):
            return .retry(after: serverDelay, code: code, detail: message)
        case (_, 401):
            return .reauthenticate(detail: message)
        case (_, 403):
            return .stop(.authentication, code: code, detail: message)
        case (_, 404), (_, 300..<400):
            // Without UNREGISTERED a 404 means the project or the URL is wrong, for every message; FCM
            // never redirects, so a redirect means the same.
            return .stop(.configuration, code: code, detail: message)
        default:
            return .dead(code: code, detail: message, unregistered: false)
        }
    }

    /// The `name` of a success body (`{"name":"projects/…/messages/…"}`): a plain scan for the common
    /// shape, JSON parsing otherwise.
    static func successName(_ body: [UInt8]) -> String {
        let key = Array(#""name":""#.utf8)
        if let start = body.firstRange(of: key)?.upperBound, let end = body[start...].firstIndex(of: UInt8(ascii: "\"")),
           !body[start..<end].contains(UInt8(ascii: "\\")) {
            return String(decoding: body[start..<end], as: UTF8.self)
        }
        let json = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        return json?["name"] as? String ?? ""
    }

    /// `Retry-After`: delta seconds or an HTTP date.
    package static func parseRetryAfter(_ value: String, now: Date) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return .seconds(max(0, date.timeIntervalSince(now)))
    }
}
