/// A quick check of the common request, without Foundation: parses the body into a small tree and
/// applies ``FCMRequestRules/check(_:)``'s rules to it. It only ever accepts: anything unusual (an
/// escape `\u`, a null, a non-string where a string is expected, a duplicate key, a body large enough
/// to be measured) or any rule broken returns nil, and the full check decides and says why. So a body
/// it accepts is one the full check accepts, with the same ``FCMRequestRules/Accepted``.
extension FCMRequestRules {
    /// One member of an object (a struct, not a tuple: no tuple metadata looked up at run time).
    struct Field {
        let key: String
        let value: Value
    }

    indirect enum Value {
        case object([Field])
        case array(count: Int)
        case string(String)
        case number
        case bool(Bool)

        subscript(_ key: String) -> Value? {
            guard case .object(let fields) = self else { return nil }
            return fields.first { $0.key == key }?.value
        }

        var object: [Field]? {
            if case .object(let fields) = self { return fields }
            return nil
        }

        var string: String? {
            if case .string(let text) = self { return text }
            return nil
        }
    }

    /// Whether a data map's digest keys have their shapes (``DigestKeyRules``); absent ones pass.
    static func digestKeysValid(_ data: Value?) -> Bool {
        guard let data else { return true }
        return DigestKeyRules.dataViolation(replyKey: data["reply_key"]?.string, picks: data["picks"]?.string, at: "") == nil
    }

    static func quickCheck(_ body: [UInt8]) -> Accepted? {
        guard body.count <= maxWebPushBytes else { return nil }
        var parser = QuickJSONParser(bytes: body)
        guard let root = parser.document(), let fields = root.object else { return nil }
        guard fields.allSatisfy({ rootKeys.contains($0.key) }) else { return nil }
        var validateOnly = false
        if let flag = root["validate_only"] {
            guard case .bool(let value) = flag else { return nil }
            validateOnly = value
        }
        guard let message = root["message"], let messageFields = message.object else { return nil }
        guard messageFields.allSatisfy({ messageKeys.contains($0.key) }),
              message["topic"] == nil, message["condition"] == nil,
              let token = message["token"]?.string, !token.isEmpty,
              isStringMap(message["data"], reservedKeysChecked: true), digestKeysValid(message["data"])
        else { return nil }
        var collapseKey: String?
        if let android = message["android"] {
            guard let fields = android.object, fields.allSatisfy({ androidKeys.contains($0.key) }) else { return nil }
            if let key = android["collapse_key"] {
                guard let key = key.string else { return nil }
                collapseKey = key
            }
            if let priority = android["priority"] {
                guard let priority = priority.string, androidPriorities.contains(priority) else { return nil }
            }
            if let ttl = android["ttl"] {
                guard let ttl = ttl.string, let seconds = durationSeconds(ttl), seconds <= maxTTLSeconds else { return nil }
            }
            guard isStringMap(android["data"], reservedKeysChecked: true), digestKeysValid(android["data"]) else { return nil }
            if let notification = android["notification"], notification.object == nil { return nil }
        }
        if let apns = message["apns"] {
            guard let fields = apns.object, fields.allSatisfy({ apnsKeys.contains($0.key) }),
                  isStringMap(apns["headers"], reservedKeysChecked: false)
            else { return nil }
            if let id = apns["headers"]?["apns-collapse-id"]?.string {
                guard id.utf8.count <= maxAPNsCollapseIDBytes else { return nil }
                collapseKey = id
            }
            if let payload = apns["payload"] {
                guard payload.object != nil else { return nil }
                if let aps = payload["aps"], aps.object == nil { return nil }
                if let category = payload["aps"]?["category"], category.string == nil { return nil }
            }
            if let options = apns["fcm_options"], options.object == nil { return nil }
        }
        if let webpush = message["webpush"] {
            guard let fields = webpush.object, fields.allSatisfy({ webpushKeys.contains($0.key) }),
                  isStringMap(webpush["headers"], reservedKeysChecked: false), isStringMap(webpush["data"], reservedKeysChecked: true)
            else { return nil }
            if let notification = webpush["notification"] {
                guard notification.object != nil else { return nil }
                if case .array(let count) = notification["actions"], count > maxWebPushActions { return nil }
                if let tag = notification["tag"], case .string(let text) = tag { collapseKey = text }
            }
            if let options = webpush["fcm_options"] {
                guard options.object != nil else { return nil }
                if let link = options["link"] {
                    guard let link = link.string, link.hasPrefix("https://") else { return nil }
                }
            }
        }
        return Accepted(token: token, validateOnly: validateOnly, collapseKey: collapseKey)
    }

    private static func isStringMap(_ value: Value?, reservedKeysChecked: Bool) -> Bool {
        guard let value else { return true }
        guard let fields = value.object else { return false }
        return fields.allSatisfy { field in
            field.value.string != nil && !(reservedKeysChecked && isReserved(field.key))
        }
    }

    static func isReserved(_ key: String) -> Bool {
        ["from", "message_type"].contains(key) || key.hasPrefix("google.") || key.hasPrefix("gcm.")
    }
}

/// A strict JSON parser for ``FCMRequestRules/quickCheck(_:)``: nil for anything it does not take
/// (invalid JSON, and valid JSON it leaves to Foundation: `\u` escapes, nulls, duplicate keys, deep
/// nesting, long or exponent numbers).
struct QuickJSONParser {
    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func document() -> FCMRequestRules.Value? {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{"), let value = value() else { return nil }
        skipWhitespace()
        return index == bytes.count ? value : nil
    }

    private mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 { index += 1 }
    }

    private mutating func value() -> FCMRequestRules.Value? {
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "{"): return object()
        case UInt8(ascii: "["): return array()
        case UInt8(ascii: "\""): return string().map { .string($0) }
        case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
        case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number() ? .number : nil
        default: return nil
        }
    }

    private mutating func literal(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { return false }
        index += count
        return true
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?`, at most 15 characters.
    private mutating func number() -> Bool {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        func digits() -> Int {
            let from = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - from
        }
        let integer = index
        let count = digits()
        guard count > 0, count == 1 || bytes[integer] != UInt8(ascii: "0") else { return false }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return false }
        }
        return index - start <= 15
    }

    private mutating func object() -> FCMRequestRules.Value? {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 64 else { return nil }
        index += 1
        var fields: [FCMRequestRules.Field] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(fields)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            skipWhitespace()
            guard let value = value(), !fields.contains(where: { $0.key == key }) else { return nil }
            fields.append(FCMRequestRules.Field(key: key, value: value))
            skipWhitespace()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(fields)
            }
            guard bytes[index] == UInt8(ascii: ",") else { return nil }
            index += 1
        }
    }

    private mutating func array() -> FCMRequestRules.Value? {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 64 else { return nil }
        index += 1
        var count = 0
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(count: 0)
        }
        while true {
            skipWhitespace()
            guard value() != nil else { return nil }
            count += 1
            skipWhitespace()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(count: count)
            }
            guard bytes[index] == UInt8(ascii: ",") else { return nil }
            index += 1
        }
    }

    /// A string without `\u` escapes, valid UTF-8, no raw control characters.
    private mutating func string() -> String? {
        index += 1
        let start = index
        var escaped = false
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { break }
            if byte < 0x20 { return nil }
            if byte == UInt8(ascii: "\\") {
                guard index + 1 < bytes.count else { return nil }
                switch bytes[index + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    escaped = true
                    index += 2
                    continue
                default:
                    return nil
                }
            }
            index += 1
        }
        guard index < bytes.count else { return nil }
        let raw = bytes[start..<index]
        index += 1
        guard escaped else { return raw.withUnsafeBufferPointer(Self.validUTF8) }
        var unescaped: [UInt8] = []
        unescaped.reserveCapacity(raw.count)
        var position = raw.startIndex
        while position < raw.endIndex {
            var byte = raw[position]
            if byte == UInt8(ascii: "\\") {
                position += 1
                switch raw[position] {
                case UInt8(ascii: "b"): byte = 0x08
                case UInt8(ascii: "f"): byte = 0x0C
                case UInt8(ascii: "n"): byte = 0x0A
                case UInt8(ascii: "r"): byte = 0x0D
                case UInt8(ascii: "t"): byte = 0x09
                default: byte = raw[position]
                }
            }
            unescaped.append(byte)
            position += 1
        }
        return unescaped.withUnsafeBufferPointer(Self.validUTF8)
    }

    /// The bytes as a string if they are valid UTF-8: decoding repairs invalid bytes, so the result
    /// holds the same bytes only if there was nothing to repair (`String(validating:)` costs a
    /// look-up of generic metadata on every call).
    private static func validUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var text = String(decoding: bytes, as: UTF8.self)
        let unchanged = text.withUTF8 { utf8 in
            guard utf8.count == bytes.count else { return false }
            for index in 0..<utf8.count where utf8[index] != bytes[index] { return false }
            return true
        }
        return unchanged ? text : nil
    }
}
