import Foundation

/// The FCM HTTP v1 rules the fake server checks each `messages:send` body against: the request shape,
/// exactly one target, string data values and unreserved keys, the platform sections' shapes and the
/// byte budgets (docs/007-rules-and-limits.md). Returns what FCM's `INVALID_ARGUMENT` would say, or nil.
package enum FCMRequestRules {
    /// What a valid request carried that the tests look at.
    package struct Accepted: Sendable, Hashable {
        package var token: String
        package var validateOnly: Bool
        /// `android.collapse_key`, `apns.headers.apns-collapse-id`, `webpush.notification.tag`.
        package var collapseKey: String?
    }

    package static let maxPayloadBytes = 4096
    package static let maxWebPushBytes = 3993

    /// The names each part of a request may hold, the Android priorities and the other bounds: one
    /// list for the full check and the quick one, so they cannot drift apart.
    static let rootKeys = ["message", "validate_only"]
    static let messageKeys = ["token", "data", "android", "apns", "webpush", "notification", "fcm_options", "name", "topic", "condition"]
    static let androidKeys = ["collapse_key", "ttl", "priority", "data", "notification", "fcm_options", "restricted_package_name", "direct_boot_ok"]
    static let apnsKeys = ["headers", "payload", "fcm_options", "live_activity_token"]
    static let webpushKeys = ["headers", "data", "notification", "fcm_options"]
    static let androidPriorities = ["normal", "high", "NORMAL", "HIGH"]
    static let maxTTLSeconds = 2_419_200.0
    static let maxAPNsCollapseIDBytes = 64
    static let maxWebPushActions = 2

    package static func check(_ body: [UInt8]) -> Result<Accepted, RuleViolation> {
        // The common valid request without Foundation; anything else, and every violation, in full.
        if let accepted = quickCheck(body) { return .success(accepted) }
        return fullCheck(body)
    }

    /// The rules on the body parsed by Foundation: decides every request ``quickCheck(_:)`` leaves.
    static func fullCheck(_ body: [UInt8]) -> Result<Accepted, RuleViolation> {
        // A part is never larger than the whole: small bodies skip measuring their sections.
        let measure = body.count > maxWebPushBytes
        guard let root = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            return .failure(RuleViolation("the body is not a JSON object"))
        }
        if let unknown = root.keys.first(where: { !rootKeys.contains($0) }) {
            return .failure(RuleViolation("Invalid JSON payload received. Unknown name \"\(unknown)\""))
        }
        var validateOnly = false
        if let flag = root["validate_only"] {
            guard let value = flag as? Bool else {
                return .failure(RuleViolation("validate_only must be a boolean"))
            }
            validateOnly = value
        }
        guard let message = root["message"] as? [String: Any] else { return .failure(RuleViolation("message is required")) }
        if let unknown = message.keys.first(where: { !messageKeys.contains($0) }) {
            return .failure(RuleViolation("Invalid JSON payload received. Unknown name \"\(unknown)\" at 'message'"))
        }
        let targets = ["token", "topic", "condition"].filter { message[$0] != nil }
        guard targets.count == 1 else { return .failure(RuleViolation("exactly one of token, topic or condition is required (got \(targets.count))")) }
        guard let token = message["token"] as? String, !token.isEmpty else {
            return .failure(RuleViolation("The registration token is not a valid FCM registration token"))
        }
        if let violation = stringMap(message["data"], at: "message.data", reservedKeysChecked: true) { return .failure(violation) }
        if let violation = digestKeys(message["data"], at: "message.data") { return .failure(violation) }
        var collapseKey: String?
        var budget = measure ? bytes(message["data"]) + bytes(message["notification"]) : 0

        if let android = message["android"] {
            guard let android = android as? [String: Any] else { return .failure(RuleViolation("message.android must be an object")) }
            if let unknown = android.keys.first(where: { !androidKeys.contains($0) }) {
                return .failure(RuleViolation("Unknown name \"\(unknown)\" at 'message.android'"))
            }
            if let key = android["collapse_key"] {
                guard let key = key as? String else { return .failure(RuleViolation("android.collapse_key must be a string")) }
                collapseKey = key
            }
            if let priority = android["priority"], !androidPriorities.contains(priority as? String ?? "") {
                return .failure(RuleViolation("Invalid value at 'message.android.priority'"))
            }
            if let ttl = android["ttl"] {
                guard let ttl = ttl as? String, let seconds = durationSeconds(ttl), seconds <= maxTTLSeconds else {
                    return .failure(RuleViolation("Invalid value at 'message.android.ttl': a duration like \"3.5s\", at most \(Int(maxTTLSeconds))s"))
                }
            }
            if let violation = stringMap(android["data"], at: "message.android.data", reservedKeysChecked: true) { return .failure(violation) }
            if let violation = digestKeys(android["data"], at: "message.android.data") { return .failure(violation) }
            if let notification = android["notification"], !(notification is [String: Any]) {
                return .failure(RuleViolation("message.android.notification must be an object"))
            }
            if measure { budget += bytes(android["data"]) + bytes(android["notification"]) }
            guard budget <= maxPayloadBytes else { return .failure(RuleViolation("Android message is too big: \(budget) bytes")) }
        }
        if let apns = message["apns"] {
            guard let apns = apns as? [String: Any] else { return .failure(RuleViolation("message.apns must be an object")) }
            if let unknown = apns.keys.first(where: { !apnsKeys.contains($0) }) {
                return .failure(RuleViolation("Unknown name \"\(unknown)\" at 'message.apns'"))
            }
            if let violation = stringMap(apns["headers"], at: "message.apns.headers", reservedKeysChecked: false) { return .failure(violation) }
            let headers = apns["headers"] as? [String: String] ?? [:]
            if let id = headers["apns-collapse-id"] {
                guard id.utf8.count <= maxAPNsCollapseIDBytes else {
                    return .failure(RuleViolation("apns-collapse-id is longer than \(maxAPNsCollapseIDBytes) bytes"))
                }
                collapseKey = id
            }
            if let payload = apns["payload"] {
                guard let payload = payload as? [String: Any] else { return .failure(RuleViolation("message.apns.payload must be an object")) }
                if let aps = payload["aps"], !(aps is [String: Any]) { return .failure(RuleViolation("apns.payload.aps must be an object")) }
                if let category = (payload["aps"] as? [String: Any])?["category"], !(category is String) {
                    return .failure(RuleViolation("apns.payload.aps.category must be a string"))
                }
                let size = measure ? bytes(payload) : 0
                guard size <= maxPayloadBytes else { return .failure(RuleViolation("APNs payload is too big: \(size) bytes")) }
            }
            if let options = apns["fcm_options"], !(options is [String: Any]) { return .failure(RuleViolation("apns.fcm_options must be an object")) }
        }
        if let webpush = message["webpush"] {
            guard let webpush = webpush as? [String: Any] else { return .failure(RuleViolation("message.webpush must be an object")) }
            if let unknown = webpush.keys.first(where: { !webpushKeys.contains($0) }) {
                return .failure(RuleViolation("Unknown name \"\(unknown)\" at 'message.webpush'"))
            }
            if let violation = stringMap(webpush["headers"], at: "message.webpush.headers", reservedKeysChecked: false) { return .failure(violation) }
            if let violation = stringMap(webpush["data"], at: "message.webpush.data", reservedKeysChecked: true) { return .failure(violation) }
            if let notification = webpush["notification"] {
                guard let notification = notification as? [String: Any] else {
                    return .failure(RuleViolation("message.webpush.notification must be an object"))
                }
                if let actions = notification["actions"] as? [Any], actions.count > maxWebPushActions {
                    return .failure(RuleViolation("webpush.notification has \(actions.count) actions; Chrome shows \(maxWebPushActions)"))
                }
                if let tag = notification["tag"] as? String { collapseKey = tag }
            }
            if let options = webpush["fcm_options"] {
                guard let options = options as? [String: Any] else { return .failure(RuleViolation("webpush.fcm_options must be an object")) }
                if let link = options["link"], !((link as? String)?.hasPrefix("https://") ?? false) {
                    return .failure(RuleViolation("webpush.fcm_options.link must be an https URL"))
                }
            }
            if measure { budget += bytes(webpush["data"]) + bytes(webpush["notification"]) }
            guard budget <= maxWebPushBytes else { return .failure(RuleViolation("Web push message is too big: \(budget) bytes")) }
        }
        return .success(Accepted(token: token, validateOnly: validateOnly, collapseKey: collapseKey))
    }

    /// The digest's own data keys' shapes (``DigestKeyRules``) in a data map already checked as one.
    static func digestKeys(_ value: Any?, at path: String) -> RuleViolation? {
        guard let data = value as? [String: String] else { return nil }
        return DigestKeyRules.dataViolation(replyKey: data["reply_key"], picks: data["picks"], at: path).map(RuleViolation.init)
    }

    /// A map<string, string>: an object whose values are all strings (and, for data, no reserved keys).
    static func stringMap(_ value: Any?, at path: String, reservedKeysChecked: Bool) -> RuleViolation? {
        guard let value else { return nil }
        guard let object = value as? [String: Any] else { return RuleViolation("Invalid value at '\(path)': not a map") }
        for (key, element) in object {
            guard element is String else {
                return RuleViolation("Invalid value at '\(path)[\(key)].value' (TYPE_STRING)")
            }
            if reservedKeysChecked && isReserved(key) {
                return RuleViolation("Invalid data payload key: \(key) is reserved")
            }
        }
        return nil
    }

    /// `"3.5s"` → 3.5.
    static func durationSeconds(_ text: String) -> Double? {
        guard text.hasSuffix("s") else { return nil }
        let number = text.dropLast()
        guard !number.isEmpty, number.allSatisfy({ $0.isNumber || $0 == "." }), let value = Double(number) else { return nil }
        return value
    }

    /// Bytes of a value serialized as JSON (0 when absent).
    static func bytes(_ value: Any?) -> Int {
        guard let value, JSONSerialization.isValidJSONObject(value),
              let data = try? JSONSerialization.data(withJSONObject: value, options: [.withoutEscapingSlashes]) else { return 0 }
        return data.count
    }
}

/// Why a request breaks the v1 rules.
package struct RuleViolation: Error, Sendable, Hashable, CustomStringConvertible {
    package let message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}
