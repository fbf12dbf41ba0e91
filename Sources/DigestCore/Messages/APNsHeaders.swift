import Crypto  // SHA-256: an `apns-id` for a message id that is not 32 hex digits
import Foundation  // JSONSerialization: reading the headers back from the outbox

/// The HTTP/2 headers of one APNs request (Apple, "Sending notification requests to APNs"), in the
/// order they are written: `apns-push-type`, `apns-priority`, `apns-expiration`, `apns-collapse-id`,
/// `apns-id`, `apns-topic`. The FCM `apns.headers` carry the first four; a direct request all six.
///
/// Stored beside the payload as a compact JSON object of strings (``json``), read back with
/// ``init(json:)``:
///
/// ```swift
/// let headers = APNsHeaders(priority: 5, expiration: 1_796_025_600, collapseID: "digest-2026-W47")
/// headers.json  // {"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1796025600","apns-collapse-id":"digest-2026-W47"}
/// ```
public struct APNsHeaders: Sendable, Hashable {
    /// `apns-push-type`: `alert`, a notification the system shows.
    public var pushType: String
    /// `apns-priority`: 10 at once, 5 power-friendly (may be grouped), 1 power first.
    public var priority: Int
    /// `apns-expiration`: Unix seconds until which APNs keeps trying (0: once, not kept).
    public var expiration: Int64
    /// `apns-collapse-id`: a newer notification with the same id replaces the shown one; at most
    /// ``collapseIDLimit`` bytes.
    public var collapseID: String?
    /// `apns-id`: the notification's canonical lower-case UUID, which APNs answers with
    /// (``id(messageID:)``). Without it APNs makes a new one per request.
    public var id: String?
    /// `apns-topic`: the app's bundle id.
    public var topic: String?

    /// Apple's limit of `apns-collapse-id`, in bytes.
    public static let collapseIDLimit = 64

    public init(
        pushType: String = "alert", priority: Int, expiration: Int64, collapseID: String?, id: String? = nil,
        topic: String? = nil
    ) {
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.id = id
        self.topic = topic
    }

    /// The headers as sent, names and values, in their fixed order; absent ones left out.
    public var fields: [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = [
            (Name.pushType, pushType), (Name.priority, String(priority)), (Name.expiration, String(expiration)),
        ]
        if let collapseID { fields.append((Name.collapseID, collapseID)) }
        if let id { fields.append((Name.id, id)) }
        if let topic { fields.append((Name.topic, topic)) }
        return fields
    }

    /// The headers as a compact JSON object of strings, in ``fields`` order: the outbox's headers
    /// column.
    public var json: String {
        var writer = JSONWriter(capacity: 256)
        write(into: &writer)
        return writer.string
    }

    /// Writes the headers as a JSON object (``json``): the FCM `apns.headers` use it too.
    package func write(into writer: inout JSONWriter) {
        writer.beginObject()
        for (name, value) in fields { writer.field(name, value) }
        writer.endObject()
    }

    /// Reads headers written by ``json``. Throws on anything else: not an object of strings, an
    /// unknown header, a required one (`apns-push-type`, `apns-priority`, `apns-expiration`) missing,
    /// or a value APNs would refuse (priority other than 1, 5, 10; expiration not Unix seconds;
    /// collapse id empty or over 64 bytes; id not a canonical lower-case UUID; topic empty).
    public init(json: some Collection<UInt8>) throws(APNsHeadersError) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else {
            throw APNsHeadersError(header: nil, "the headers are not a JSON object")
        }
        var values: [String: String] = [:]
        for (name, value) in object {
            guard Name.all.contains(name) else { throw APNsHeadersError(header: name, "unknown header") }
            guard let text = value as? String else { throw APNsHeadersError(header: name, "not a string") }
            values[name] = text
        }
        func required(_ name: String) throws(APNsHeadersError) -> String {
            guard let value = values[name], !value.isEmpty else { throw APNsHeadersError(header: name, "missing") }
            return value
        }
        let pushType = try required(Name.pushType)
        guard let priority = Int(try required(Name.priority)), [1, 5, 10].contains(priority) else {
            throw APNsHeadersError(header: Name.priority, "not 1, 5 or 10")
        }
        let expirationText = try required(Name.expiration)
        guard expirationText.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let expiration = Int64(expirationText) else {
            throw APNsHeadersError(header: Name.expiration, "not Unix seconds")
        }
        if let collapseID = values[Name.collapseID], collapseID.isEmpty || collapseID.utf8.count > Self.collapseIDLimit {
            throw APNsHeadersError(header: Name.collapseID, "empty or over \(Self.collapseIDLimit) bytes")
        }
        if let id = values[Name.id], !Self.isCanonicalUUID(id) {
            throw APNsHeadersError(header: Name.id, "not a canonical lower-case UUID")
        }
        if values[Name.topic]?.isEmpty == true { throw APNsHeadersError(header: Name.topic, "empty") }
        self.init(
            pushType: pushType, priority: priority, expiration: expiration, collapseID: values[Name.collapseID],
            id: values[Name.id], topic: values[Name.topic])
    }

    /// The `apns-id` of a message: its id (32 hex digits, ``OutboxMessage/messageID(dedupeKey:position:)``)
    /// in the canonical 8-4-4-4-12 form, as an RFC 9562 version 8 UUID (digit 13 is `8`, digit 17's
    /// top two bits `10`; the other 122 bits are the message id's). The same message gives the same
    /// id on every retry and rerun, and an id APNs answers with leads to its outbox row. A message id
    /// of another form is hashed (SHA-256) first.
    public static func id(messageID: String) -> String {
        var bytes = hexBytes(messageID) ?? Array(SHA256.hash(data: Array(messageID.utf8)).prefix(16))
        bytes[6] = bytes[6] & 0x0F | 0x80
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = OutboxMessage.hex(bytes)
        var uuid = ""
        for (index, character) in hex.enumerated() {
            if [8, 12, 16, 20].contains(index) { uuid.append("-") }
            uuid.append(character)
        }
        return uuid
    }

    /// Whether `text` is 32 lower-case hex digits in 8-4-4-4-12 groups.
    static func isCanonicalUUID(_ text: String) -> Bool {
        let utf8 = Array(text.utf8)
        guard utf8.count == 36 else { return false }
        for (index, byte) in utf8.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard byte == UInt8(ascii: "-") else { return false }
            } else if !Self.isLowerHex(byte) {
                return false
            }
        }
        return true
    }

    /// 16 bytes from exactly 32 lower-case hex digits.
    private static func hexBytes(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count == 32, utf8.allSatisfy(isLowerHex) else { return nil }
        func value(_ byte: UInt8) -> UInt8 { byte <= 0x39 ? byte - 0x30 : byte - 0x61 + 10 }
        return stride(from: 0, to: 32, by: 2).map { value(utf8[$0]) << 4 | value(utf8[$0 + 1]) }
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) }

    /// The header names, as APNs spells them.
    enum Name {
        static let pushType = "apns-push-type"
        static let priority = "apns-priority"
        static let expiration = "apns-expiration"
        static let collapseID = "apns-collapse-id"
        static let id = "apns-id"
        static let topic = "apns-topic"
        static let all: Set<String> = [pushType, priority, expiration, collapseID, id, topic]
    }
}

/// Stored APNs headers that cannot be read back (``APNsHeaders/init(json:)``).
public struct APNsHeadersError: Error, Sendable, CustomStringConvertible {
    /// The header at fault; `nil` when the whole value is.
    public let header: String?
    /// What is wrong with it.
    public let message: String

    init(header: String?, _ message: String) {
        self.header = header
        self.message = message
    }

    public var description: String { header.map { "\($0): \(message)" } ?? message }
}
