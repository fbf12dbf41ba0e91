import Foundation  // JSONSerialization: reading the row back from the outbox

/// What a Web Push outbox row holds beside its plaintext: the request headers that do not change
/// between tries (`Urgency`, `Topic`), the instant the message stops being worth delivering (its
/// `TTL` header is counted from it at each try), and the subscription's keys, which the sender
/// encrypts the plaintext to afresh for every try (RFC 8291 needs a new key and salt each time).
///
/// Stored as the row's `headers`, a compact JSON object (``json``), read back with ``init(json:)``:
///
/// ```swift
/// let headers = WebPushHeaders(urgency: .normal, topic: "digest-2026-W47", expiresAt: 1_796_025_600,
///                              p256dh: "BCVxsr7N…", auth: "BTBZMqHH6r4Tts7J_aSIgg")
/// headers.json  // {"urgency":"normal","topic":"digest-2026-W47","expires":1796025600,"p256dh":"BCVxsr7N…","auth":"BTBZMqHH6r4Tts7J_aSIgg"}
/// headers.ttl(now: 1_795_420_800)  // 604800
/// ```
package struct WebPushHeaders: Sendable, Hashable {
    /// RFC 8030's `Urgency`: how soon the push service should wake the device.
    package enum Urgency: String, Sendable, Hashable, CaseIterable {
        case veryLow = "very-low"
        case low
        case normal
        case high
    }

    /// `Urgency`.
    package var urgency: Urgency
    /// `Topic`: a newer message with the same topic replaces one the push service still holds; at
    /// most ``topicLimit`` characters of the base64url alphabet (RFC 8030, 5.4).
    package var topic: String?
    /// Unix seconds after which the message is not worth delivering: `TTL` is the seconds left.
    package var expiresAt: Int64
    /// The subscription's `keys.p256dh` and `keys.auth`, base64url as the browser gave them.
    package var p256dh: String
    package var auth: String

    /// RFC 8030's limit of `Topic`, in characters.
    package static let topicLimit = 32

    package init(urgency: Urgency = .normal, topic: String?, expiresAt: Int64, p256dh: String, auth: String) {
        self.urgency = urgency
        self.topic = topic
        self.expiresAt = expiresAt
        self.p256dh = p256dh
        self.auth = auth
    }

    /// The `TTL` header at `now` (Unix seconds): the seconds until ``expiresAt``, 0 once past it.
    package func ttl(now: Int64) -> Int64 { max(0, expiresAt - now) }

    /// Whether `topic` is a valid `Topic`: 1 to 32 characters of `A–Z a–z 0–9 - _`.
    package static func isValidTopic(_ topic: String) -> Bool {
        (1...topicLimit).contains(topic.utf8.count) && topic.utf8.allSatisfy(isBase64URL)
    }

    /// Whether `byte` is in the base64url alphabet (no padding).
    static func isBase64URL(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
    }

    /// The row's `headers` column: a compact JSON object, keys in a fixed order, no escapes needed
    /// (every value is base64url, a number or an urgency name).
    package var json: String {
        var writer = JSONWriter(capacity: 192 + p256dh.utf8.count + auth.utf8.count)
        writer.beginObject()
        writer.field(Name.urgency, urgency.rawValue)
        if let topic { writer.field(Name.topic, topic) }
        writer.field(Name.expires, Int(expiresAt))
        writer.field(Name.p256dh, p256dh)
        writer.field(Name.auth, auth)
        writer.endObject()
        return writer.string
    }

    /// Reads a row written by ``json``. Throws on anything else: not an object, an unknown key, a
    /// missing one, an urgency RFC 8030 does not name, a topic that is not 1–32 base64url characters,
    /// `expires` not whole Unix seconds, keys that are not base64url text. (Whether the keys are a
    /// P-256 point and a 16-byte secret is the encryption's check.)
    package init(json: some Collection<UInt8>) throws(WebPushHeadersError) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else {
            throw WebPushHeadersError(key: nil, "the Web Push row is not a JSON object")
        }
        for key in object.keys where !Name.all.contains(key) {
            throw WebPushHeadersError(key: key, "unknown key")
        }
        func text(_ key: String) throws(WebPushHeadersError) -> String {
            guard let value = object[key] else { throw WebPushHeadersError(key: key, "missing") }
            guard let text = value as? String, !text.isEmpty else { throw WebPushHeadersError(key: key, "not a non-empty string") }
            return text
        }
        guard let urgency = Urgency(rawValue: try text(Name.urgency)) else {
            throw WebPushHeadersError(key: Name.urgency, "not very-low, low, normal or high")
        }
        var topic: String?
        if object[Name.topic] != nil {
            let given = try text(Name.topic)
            guard Self.isValidTopic(given) else {
                throw WebPushHeadersError(key: Name.topic, "not 1 to \(Self.topicLimit) base64url characters")
            }
            topic = given
        }
        // JSON's true and false come back as a subclass of NSNumber that also casts to Int64.
        guard let value = object[Name.expires], type(of: value) == NSNumber.self, let expires = value as? Int64 else {
            throw WebPushHeadersError(key: Name.expires, object[Name.expires] == nil ? "missing" : "not whole Unix seconds")
        }
        let p256dh = try text(Name.p256dh), auth = try text(Name.auth)
        // Base64url, with the padding some browsers of old added.
        for (key, value) in [(Name.p256dh, p256dh), (Name.auth, auth)] where !value.utf8.allSatisfy({ Self.isBase64URL($0) || $0 == 0x3D }) {
            throw WebPushHeadersError(key: key, "not base64url")
        }
        self.init(urgency: urgency, topic: topic, expiresAt: expires, p256dh: p256dh, auth: auth)
    }

    /// The keys, as the row spells them.
    enum Name {
        static let urgency = "urgency"
        static let topic = "topic"
        static let expires = "expires"
        static let p256dh = "p256dh"
        static let auth = "auth"
        static let all: Set<String> = [urgency, topic, expires, p256dh, auth]
    }
}

/// A stored Web Push row that cannot be read back (``WebPushHeaders/init(json:)``).
package struct WebPushHeadersError: Error, Sendable, CustomStringConvertible {
    /// The key at fault; `nil` when the whole value is.
    package let key: String?
    /// What is wrong with it.
    package let message: String

    init(key: String?, _ message: String) {
        self.key = key
        self.message = message
    }

    package var description: String { key.map { "\($0): \(message)" } ?? message }
}
