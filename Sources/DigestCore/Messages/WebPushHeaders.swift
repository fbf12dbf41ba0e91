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
    /// P-256 point and a 16-byte secret is the encryption's check.) Read by a scanner of flat JSON
    /// objects rather than `JSONSerialization`, which cost the sender more than the row's
    /// encryption's key derivation, every try of every message.
    package init(json: some Collection<UInt8>) throws(WebPushHeadersError) {
        let fields = try FlatJSONObject(json)
        for key in fields.keys where !Name.all.contains(key) {
            throw WebPushHeadersError(key: key, "unknown key")
        }
        func text(_ key: String) throws(WebPushHeadersError) -> String {
            guard let value = fields[key] else { throw WebPushHeadersError(key: key, "missing") }
            guard case .string(let text) = value, !text.isEmpty else { throw WebPushHeadersError(key: key, "not a non-empty string") }
            return text
        }
        guard let urgency = Urgency(rawValue: try text(Name.urgency)) else {
            throw WebPushHeadersError(key: Name.urgency, "not very-low, low, normal or high")
        }
        var topic: String?
        if fields[Name.topic] != nil {
            let given = try text(Name.topic)
            guard Self.isValidTopic(given) else {
                throw WebPushHeadersError(key: Name.topic, "not 1 to \(Self.topicLimit) base64url characters")
            }
            topic = given
        }
        guard let value = fields[Name.expires] else { throw WebPushHeadersError(key: Name.expires, "missing") }
        guard case .number(let number) = value, let expires = Int64(number) else {
            throw WebPushHeadersError(key: Name.expires, "not whole Unix seconds")
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

/// A JSON object whose values are strings, numbers or `true`/`false`/`null` (nothing nested), read
/// as a row of the outbox is: the keys and values as they are spelled, strings without escapes (the
/// rows need none), a key given twice refused. Anything else is "not a JSON object".
struct FlatJSONObject {
    enum Value: Equatable {
        case string(String)
        /// The number as written (`-`, digits, fraction and exponent).
        case number(String)
        case literal
    }

    /// The fields in their order: a handful, found by a look along them (no hashing).
    private(set) var fields: [(key: String, value: Value)] = []

    var keys: some Sequence<String> { fields.lazy.map(\.key) }

    subscript(key: String) -> Value? { fields.first { $0.key == key }?.value }

    init(_ json: some Collection<UInt8>) throws(WebPushHeadersError) {
        let bytes = Array(json)
        fields.reserveCapacity(5)
        var index = 0
        let notAnObject = WebPushHeadersError(key: nil, "the Web Push row is not a JSON object")
        func blanks() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }
        func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }
        func string() throws(WebPushHeadersError) -> String {
            guard take(0x22) else { throw notAnObject }
            let start = index
            while index < bytes.count, bytes[index] != 0x22 {
                guard bytes[index] != 0x5C, bytes[index] >= 0x20 else { throw notAnObject }
                index += 1
            }
            guard index < bytes.count else { throw notAnObject }
            defer { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }
        blanks()
        guard take(0x7B) else { throw notAnObject }
        blanks()
        if !take(0x7D) {
            repeat {
                blanks()
                let key = try string()
                blanks()
                guard take(0x3A) else { throw notAnObject }
                blanks()
                let value: Value
                guard index < bytes.count else { throw notAnObject }
                switch bytes[index] {
                case 0x22:
                    value = .string(try string())
                case 0x2D, 0x30...0x39:
                    let start = index
                    number: while index < bytes.count {
                        switch bytes[index] {
                        case 0x30...0x39, 0x2D, 0x2B, 0x2E, 0x45, 0x65: index += 1
                        default: break number
                        }
                    }
                    value = .number(String(decoding: bytes[start..<index], as: UTF8.self))
                default:
                    let literal = bytes[index...].prefix { (0x61...0x7A).contains($0) }
                    guard ["true", "false", "null"].contains(String(decoding: literal, as: UTF8.self)) else { throw notAnObject }
                    index += literal.count
                    value = .literal
                }
                guard self[key] == nil else { throw WebPushHeadersError(key: key, "given twice") }
                fields.append((key, value))
                blanks()
            } while take(0x2C)
            guard take(0x7D) else { throw notAnObject }
        }
        blanks()
        guard index == bytes.count else { throw notAnObject }
    }
}
