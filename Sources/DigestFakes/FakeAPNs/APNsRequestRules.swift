import Crypto
import Foundation

/// The checks the fake APNs server makes on each request that need no state: the path and method,
/// repeated headers, the device token, the `apns-*` headers and the payload, each answered with the
/// status and `reason` Apple documents ("Handling notification responses from APNs"), and the
/// provider token's shape and signature. What needs state (the provider token's age and updates,
/// injected faults) is the server's.
enum APNsRequestRules {
    /// An error answer: the HTTP status and the `reason` of the JSON body.
    struct Failure: Error, Hashable {
        var status: Int
        var reason: String
        init(_ status: Int, _ reason: String) {
            self.status = status
            self.reason = reason
        }
    }

    /// What a request that passed these checks carries.
    struct Checked {
        /// The device token from the path, lower-cased.
        var token: String
        /// The request's `apns-*` headers (names lower-case).
        var apnsHeaders: [String: String]
    }

    /// Apple's `apns-push-type` values.
    static let pushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk", "widgets",
    ]
    /// What a token-based connection may add to an app's bundle id for the other push types.
    static let topicSuffixes = [".voip", ".complication", ".pushkit.fileprovider", ".push-type.liveactivity", ".voip-ptt"]
    static let priorities: Set<String> = ["10", "5", "1"]
    static let maxPayloadBytes = 4096
    static let maxVoIPPayloadBytes = 5120
    static let maxCollapseIDBytes = 64
    static let devicePathPrefix = "/3/device/"

    /// The checks in the order the fake makes them, all but the provider token's (which the server
    /// makes between ``checkRequestLine(method:path:headers:)`` and ``checkRequest(path:headers:body:topics:)``).
    static func checkRequestLine(method: String, path: String, headers: [(String, String)]) -> Failure? {
        guard path.hasPrefix(devicePathPrefix) else { return Failure(404, "BadPath") }
        guard method == "POST" else { return Failure(405, "MethodNotAllowed") }
        // HTTP/2 names are lower-case already (RFC 9113 8.2.1); others are folded first.
        var seen = Set<String>(minimumCapacity: headers.count)
        for (name, _) in headers where !seen.insert(HeaderName.folded(name)).inserted { return Failure(400, "DuplicateHeaders") }
        return nil
    }

    /// The device token, the `apns-*` headers and the payload.
    static func checkRequest(path: String, headers: [(String, String)], body: [UInt8], bodyLength: Int, topics: Set<String>)
        -> Result<Checked, Failure>
    {
        let token = path.dropFirst(devicePathPrefix.count)
        guard !token.isEmpty else { return .failure(Failure(400, "MissingDeviceToken")) }
        guard isDeviceToken(token) else { return .failure(Failure(400, "BadDeviceToken")) }
        var apns: [String: String] = [:]
        for (name, value) in headers where name.utf8.count > 5 {
            let name = HeaderName.folded(name)
            if name.hasPrefix("apns-") { apns[name] = value }
        }
        guard let topic = apns["apns-topic"] else { return .failure(Failure(400, "MissingTopic")) }
        guard !topic.isEmpty, !topic.contains(where: \.isWhitespace) else { return .failure(Failure(400, "BadTopic")) }
        guard topicAllowed(topic, topics) else { return .failure(Failure(400, "TopicDisallowed")) }
        let pushType = apns["apns-push-type"]
        if let pushType, !pushTypes.contains(pushType) { return .failure(Failure(400, "InvalidPushType")) }
        if let priority = apns["apns-priority"], !priorities.contains(priority) { return .failure(Failure(400, "BadPriority")) }
        if let expiration = apns["apns-expiration"], !isDecimal(expiration) { return .failure(Failure(400, "BadExpirationDate")) }
        if let collapseID = apns["apns-collapse-id"], collapseID.utf8.count > maxCollapseIDBytes {
            return .failure(Failure(400, "BadCollapseId"))
        }
        if let id = apns["apns-id"], !isUUID(id) { return .failure(Failure(400, "BadMessageId")) }
        guard bodyLength > 0 else { return .failure(Failure(400, "PayloadEmpty")) }
        guard bodyLength <= (pushType == "voip" ? maxVoIPPayloadBytes : maxPayloadBytes) else {
            return .failure(Failure(413, "PayloadTooLarge"))
        }
        // `BadPayload` is this fake's own answer: Apple documents none for a payload that is not a JSON
        // object with an `aps` dictionary, but a sender that sends one has a bug the tests should see.
        switch PayloadShape.of(body) {
        case .valid(let aps):
            // The alert push type is for an alert, a badge or a sound (Apple's description of it).
            if pushType == "alert" && aps.isDisjoint(with: ["alert", "badge", "sound"]) { return .failure(Failure(400, "BadPayload")) }
            if !digestKeysValid(body) { return .failure(Failure(400, "BadPayload")) }
        case .invalid:
            return .failure(Failure(400, "BadPayload"))
        }
        return .success(Checked(token: token.lowercased(), apnsHeaders: apns))
    }

    /// The digest's own keys (``DigestKeyRules``), looked at only in a payload that names one:
    /// `reply_key` beside `aps`, and `aps.category` a string.
    static func digestKeysValid(_ body: [UInt8]) -> Bool {
        let text = String(decoding: body, as: UTF8.self)
        guard text.contains("\"reply_key\"") || text.contains("\"category\"") else { return true }
        guard let payload = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else { return false }
        if let category = (payload["aps"] as? [String: Any])?["category"], !(category is String) { return false }
        if let key = payload["reply_key"] {
            guard let key = key as? String, DigestKeyRules.isReplyKey(key) else { return false }
        }
        return true
    }

    static func topicAllowed(_ topic: String, _ topics: Set<String>) -> Bool {
        if topics.contains(topic) { return true }
        return topicSuffixes.contains { suffix in topic.hasSuffix(suffix) && topics.contains(String(topic.dropLast(suffix.count))) }
    }

    /// 64 to 200 hexadecimal digits, either case.
    static func isDeviceToken(_ token: Substring) -> Bool {
        (64...200).contains(token.utf8.count) && token.utf8.allSatisfy(isHexDigit)
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    static func isDecimal(_ text: String) -> Bool { !text.isEmpty && text.utf8.count <= 18 && text.utf8.allSatisfy { (0x30...0x39).contains($0) } }

    /// 8-4-4-4-12 hexadecimal digits, either case.
    static func isUUID(_ text: String) -> Bool {
        guard text.utf8.count == 36 else { return false }
        for (index, byte) in text.utf8.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else if !isHexDigit(byte) {
                return false
            }
        }
        return true
    }

    // MARK: Provider tokens

    /// A provider token whose signature verified: its key id and issue time.
    struct ProviderToken: Hashable {
        var keyID: String
        var issuedAt: Int64
    }

    /// Checks a provider token's form (`header.claims.signature`, base64url), its header (`alg` ES256,
    /// `kid` one of `keys`), its ES256 signature by that key and its claims (`iss` the team id, `iat`
    /// an integer). Its age is the caller's to check.
    static func verify(_ jwt: String, keys: [String: P256.Signing.PublicKey], teamID: String) -> ProviderToken? {
        guard let token = CompactJWT(jwt), let keyID = token.header.kid, let key = keys[keyID], token.isES256(signedBy: key) else { return nil }
        // `iat` decodes as Int64 only from an integer (not a string, a fraction or a boolean).
        guard let claims = token.claims(as: Claims.self), claims.iss == teamID else { return nil }
        return ProviderToken(keyID: keyID, issuedAt: claims.iat)
    }

    private struct Claims: Decodable {
        var iss: String
        var iat: Int64
    }
}

/// Whether a payload is a JSON object with an `aps` object, and the keys of that: a small JSON
/// validator over the bytes (no Foundation), for the fake's every request.
enum PayloadShape {
    case valid(apsKeys: Set<String>)
    case invalid

    static func of(_ bytes: [UInt8]) -> PayloadShape {
        bytes.withUnsafeBufferPointer { buffer in
            var parser = Parser(bytes: buffer)
            guard let aps = parser.document(), parser.index == buffer.count else { return .invalid }
            return aps.map { .valid(apsKeys: $0) } ?? .invalid
        }
    }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        var depth = 0

        /// The whole document: a top-level object; the keys of its `aps` object (nil when there is none
        /// or the JSON is invalid; invalid JSON leaves `index` short of the end).
        mutating func document() -> Set<String>?? {
            skipSpace()
            guard peek == UInt8(ascii: "{") else { return nil }
            var aps: Set<String>?
            let valid = object { parser, key in
                if key == "aps" {
                    guard parser.peek == UInt8(ascii: "{") else {
                        aps = nil
                        return parser.value()
                    }
                    var keys = Set<String>()
                    let valid = parser.object { parser, key in
                        keys.insert(key)
                        return parser.value()
                    }
                    aps = keys
                    return valid
                }
                return parser.value()
            }
            guard valid else { return nil }
            skipSpace()
            return .some(aps)
        }

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
        }

        mutating func value() -> Bool {
            skipSpace()
            guard let byte = peek else { return false }
            switch byte {
            case UInt8(ascii: "{"): return object { parser, _ in parser.value() }
            case UInt8(ascii: "["): return array()
            case UInt8(ascii: "\""): return skipString()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return number()
            }
        }

        /// `{` members `}`, each member's value read by `member` (given the decoded key).
        mutating func object(_ member: (inout Parser, String) -> Bool) -> Bool {
            guard depth < 256 else { return false }
            depth += 1
            defer { depth -= 1 }
            index += 1  // {
            skipSpace()
            if peek == UInt8(ascii: "}") {
                index += 1
                return true
            }
            while true {
                skipSpace()
                guard peek == UInt8(ascii: "\""), let key = string() else { return false }
                skipSpace()
                guard peek == UInt8(ascii: ":") else { return false }
                index += 1
                skipSpace()
                guard member(&self, key) else { return false }
                skipSpace()
                switch peek {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"):
                    index += 1
                    return true
                default: return false
                }
            }
        }

        mutating func array() -> Bool {
            guard depth < 256 else { return false }
            depth += 1
            defer { depth -= 1 }
            index += 1  // [
            skipSpace()
            if peek == UInt8(ascii: "]") {
                index += 1
                return true
            }
            while true {
                guard value() else { return false }
                skipSpace()
                switch peek {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"):
                    index += 1
                    return true
                default: return false
                }
            }
        }

        /// A string checked as ``string()`` checks it, without decoding it (a value: only keys are
        /// needed decoded); false when malformed.
        mutating func skipString() -> Bool {
            index += 1  // "
            while let byte = peek {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return true
                case UInt8(ascii: "\\"):
                    guard let escape = peek else { return false }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                        UInt8(ascii: "r"), UInt8(ascii: "t"):
                        break
                    case UInt8(ascii: "u"):
                        guard hex4() != nil else { return false }
                    default:
                        return false
                    }
                case 0..<0x20:
                    return false
                default:
                    break
                }
            }
            return false
        }

        /// A string, decoded (escapes resolved; lone surrogates become U+FFFD); nil when malformed.
        mutating func string() -> String? {
            index += 1  // "
            var decoded: [UInt8] = []
            while let byte = peek {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: decoded, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escape = peek else { return nil }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
                    case UInt8(ascii: "b"): decoded.append(0x08)
                    case UInt8(ascii: "f"): decoded.append(0x0C)
                    case UInt8(ascii: "n"): decoded.append(0x0A)
                    case UInt8(ascii: "r"): decoded.append(0x0D)
                    case UInt8(ascii: "t"): decoded.append(0x09)
                    case UInt8(ascii: "u"):
                        guard let unit = hex4() else { return nil }
                        var scalar = Unicode.Scalar(unit)
                        if (0xD800..<0xDC00).contains(unit), peek == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") {
                            index += 2
                            guard let low = hex4() else { return nil }
                            if (0xDC00..<0xE000).contains(low) {
                                scalar = Unicode.Scalar(0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00))
                            }
                        }
                        decoded.append(contentsOf: Array(String(Character(scalar ?? "\u{FFFD}")).utf8))
                    default:
                        return nil
                    }
                case 0..<0x20:
                    return nil
                default:
                    decoded.append(byte)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt16? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt16 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case 0x30...0x39: digit = byte - 0x30
                case 0x41...0x46: digit = byte - 0x41 + 10
                case 0x61...0x66: digit = byte - 0x61 + 10
                default: return nil
                }
                value = value << 4 | UInt16(digit)
                index += 1
            }
            return value
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
            index += count
            return true
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
        mutating func number() -> Bool {
            if peek == UInt8(ascii: "-") { index += 1 }
            guard let first = peek, (0x30...0x39).contains(first) else { return false }
            index += 1
            if first != 0x30 { digits() }
            if peek == UInt8(ascii: ".") {
                index += 1
                guard digits() else { return false }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                index += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                guard digits() else { return false }
            }
            return true
        }

        /// One or more digits (false when none).
        @discardableResult
        mutating func digits() -> Bool {
            let start = index
            while let byte = peek, (0x30...0x39).contains(byte) { index += 1 }
            return index > start
        }
    }
}
