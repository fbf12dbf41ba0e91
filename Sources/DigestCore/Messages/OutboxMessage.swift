import Crypto

/// A finished message as the run hands it to the outbox (docs/001-outbox-semantics.md).
public struct OutboxMessage: Sendable, Hashable {
    /// `<week>:<user id>:<sha256 of token, hex>`: one message per device and week.
    public let dedupeKey: String
    /// The id the apps report events with: `message_id` in the message's data, the same on the
    /// outbox row (``messageID(dedupeKey:position:)``, made once by the composer; without one, the
    /// earlier ``messageID(dedupeKey:)``).
    public let messageID: String
    public var week: String
    public var userID: String
    public var platform: Platform
    public var variant: Variant
    /// The push service the message goes through (the device's).
    public var provider: Provider
    /// The token the message goes to (the device's): what the dead-device memory, "one device, one
    /// reader" and prune work from, whatever the provider's body looks like.
    public var target: String
    /// Exactly what is sent, JSON: the FCM v1 request body, the APNs payload, or the Web Push plaintext
    /// (which the sender encrypts at every try).
    public var message: [UInt8]
    /// The APNs request headers as a compact JSON object (`{"apns-push-type":"alert",…}`), or a Web Push
    /// row's ``WebPushHeaders/json`` (urgency, topic, expiry, the subscription's keys); `nil` for FCM,
    /// whose body carries everything.
    public var headers: String?
    /// JSON: picks, bytes per budget, rules.
    public var report: String
    /// Not to be sent before (Unix seconds, UTC).
    public var availableAt: Int64
    /// The digest's picks (article ids, best first): the store keeps them per user and week so later
    /// digests do not repeat them. The same for every device of a user.
    public var picks: [String]
    /// When the reader's quiet hours start after `availableAt` (`nil`: none): a sender holds a message
    /// it did not send by then until `quietUntil`, the same hours each following day.
    public var windowEnd: Int64?
    public var quietUntil: Int64?
    /// Due time plus TTL: not sent at or after it (state `expired`). `nil`: never expires.
    public var expiresAt: Int64?
    /// The locale whose templates composed the message (the resolved one: `pl-PL` → `pl`), for the
    /// report's per-locale figures. `nil`: not known.
    public var locale: String?
    /// `--deliver-at habit`: how the due time was chosen (the outbox's `timing`); `nil` otherwise.
    package var timing: DeliveryTiming?
    /// The local time of day chosen, `HH:MM` (the outbox's `due_local`): the habit hour or the
    /// delivery time; `available_at` says when the message is due (later for a reader enqueued late).
    package var dueLocal: String?

    public init(
        dedupeKey: String, week: String, userID: String, platform: Platform, variant: Variant,
        message: [UInt8], report: String, availableAt: Int64, picks: [String] = [],
        windowEnd: Int64? = nil, quietUntil: Int64? = nil, expiresAt: Int64? = nil, locale: String? = nil,
        messageID: String? = nil, provider: Provider = .fcm, target: String? = nil, headers: String? = nil
    ) {
        self.messageID = messageID ?? Self.messageID(dedupeKey: dedupeKey)
        self.provider = provider
        // The composer always says; a message built by hand (tests, tools) is an FCM body naming its token.
        self.target = target ?? Self.fcmToken(in: message)
        self.headers = headers
        self.locale = locale
        self.windowEnd = windowEnd
        self.quietUntil = quietUntil
        self.expiresAt = expiresAt
        self.dedupeKey = dedupeKey
        self.week = week
        self.userID = userID
        self.platform = platform
        self.variant = variant
        self.message = message
        self.report = report
        self.availableAt = availableAt
        self.picks = picks
    }

    /// `<week>:<sha256 of token>`: unique in the outbox, so a token gets at most one message a week
    /// whichever reader it was listed under (the last part of the dedupe key is the token's hash).
    /// PostgreSQL writes it on every row; SQLite only on the messages of tokens that changed reader.
    public var tokenKey: String { "\(week):\(tokenHash)" }

    /// The last part of the dedupe key: the SHA-256 of the device's token, in hex.
    public var tokenHash: Substring {
        // The key is ASCII up to the hash: found on its UTF-8 view, without grapheme breaking.
        let utf8 = dedupeKey.utf8
        guard let colon = utf8.lastIndex(of: UInt8(ascii: ":")) else { return dedupeKey[...] }
        return dedupeKey[utf8.index(after: colon)...]
    }

    /// The dedupe key of a device's message for a week.
    public static func dedupeKey(week: ISOWeek, userID: String, token: String) -> String {
        dedupeKey(week: week.description, userID: userID, token: token)
    }

    /// The same, with the week as written (`2026-W46`).
    public static func dedupeKey(week: String, userID: String, token: String) -> String {
        week + ":" + userID + ":" + tokenHash(token)
    }

    /// Lowercase hex SHA-256 of a device token.
    public static func tokenHash(_ token: String) -> String {
        sha256(token).withUnsafeBytes { hex($0) }
    }

    /// The SHA-256 of `text`'s UTF-8 bytes, hashed where they are (no copy into an array).
    static func sha256(_ text: String) -> SHA256.Digest {
        var text = text
        return text.withUTF8 { bytes in
            var hasher = SHA256()
            hasher.update(bufferPointer: UnsafeRawBufferPointer(bytes))
            return hasher.finalize()
        }
    }

    /// The value of the first `"token":"…"` in an FCM v1 body (empty when it has none): the target of
    /// a message built without one. FCM tokens need no JSON escapes.
    static func fcmToken(in body: [UInt8]) -> String {
        let key = Array(#""token":""#.utf8)
        guard body.count > key.count else { return "" }
        for start in 0...(body.count - key.count) where body[start..<start + key.count].elementsEqual(key) {
            let valueStart = start + key.count
            guard let end = body[valueStart...].firstIndex(of: UInt8(ascii: "\"")) else { return "" }
            return String(decoding: body[valueStart..<end], as: UTF8.self)
        }
        return ""
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        Array(bytes).withUnsafeBytes { hex($0) }
    }

    /// Lowercase hex of `bytes`, written straight into the string's storage.
    static func hex(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: 2 * bytes.count) { out in
            for (index, byte) in bytes.enumerated() {
                out[2 * index] = hexDigit(byte >> 4)
                out[2 * index + 1] = hexDigit(byte & 0xF)
            }
            return 2 * bytes.count
        }
    }

    /// The lowercase hex digit of a value below 16.
    @inline(__always)
    static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? 0x30 + value : 0x57 + value }
}
