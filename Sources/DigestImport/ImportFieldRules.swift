import Foundation

/// The checks identifiers and names of an import line pass as they are: an id, a token, a locale, a
/// time zone or a url is stored exactly as written or its line is skipped, never changed into
/// another one. (Free text, like a title, is cleaned instead: ``ImportRecords``.)
enum ImportFieldRules {
    /// A control character: C0 (tab, line feed, NUL…), DEL, C1, and the line and paragraph separators.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00..<0x20, 0x7F..<0xA0, 0x2028, 0x2029: true
        default: false
        }
    }

    /// The first control character of `text`, if any.
    static func firstControl(in text: String) -> Unicode.Scalar? {
        text.unicodeScalars.first(where: isControl)
    }

    /// `U+000A`.
    static func name(of scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// A user or article id: 1 to ``ImportLimits/maxIDBytes`` UTF-8 bytes, no control characters, in
    /// Unicode NFC. The stores compare ids as bytes and Swift compares strings by canonical
    /// equivalence; for ids in NFC the two agree, so `é` and `e` + U+0301 are never one user in
    /// one place and two in another.
    static func id(_ id: String, _ what: String) throws(LineProblem) -> String {
        guard !id.isEmpty else { throw LineProblem(.badID, "empty \(what)") }
        guard id.utf8.count <= ImportLimits.maxIDBytes else {
            throw LineProblem(.badID, "\(what) \(quote(id)) is \(id.utf8.count) bytes, over the limit of \(ImportLimits.maxIDBytes)")
        }
        if let control = firstControl(in: id) {
            throw LineProblem(.badID, "\(what) \(quote(id)) holds a control character (\(name(of: control)))")
        }
        guard isNFC(id) else {
            throw LineProblem(.badID, "\(what) \(quote(id)) is not in Unicode NFC (ids are never normalized)")
        }
        return id
    }

    /// Whether `text`'s bytes are those of its NFC form.
    static func isNFC(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 < 0x80 } || text.precomposedStringWithCanonicalMapping.utf8.elementsEqual(text.utf8)
    }

    /// A device token: 1 to ``ImportLimits/maxTokenBytes`` bytes of printable ASCII, no spaces. A token
    /// is never quoted in a problem, only its position.
    static func token(_ token: String, _ what: String) throws(LineProblem) -> String {
        guard !token.isEmpty else { throw LineProblem(.badToken, "\(what): empty token") }
        guard token.utf8.count <= ImportLimits.maxTokenBytes else {
            throw LineProblem(.badToken, "\(what): token of \(token.utf8.count) bytes, over the limit of \(ImportLimits.maxTokenBytes)")
        }
        if let bad = token.unicodeScalars.first(where: { $0.value <= 0x20 || $0.value >= 0x7F }) {
            let kind = isControl(bad) ? "a control character" : (bad.value == 0x20 ? "a space" : "a character outside printable ASCII")
            throw LineProblem(.badToken, "\(what): token holds \(kind) (\(name(of: bad)))")
        }
        return token
    }

    /// An APNs device token (already a ``token(_:_:)``): hex of even length, 64 to 200 digits, returned
    /// lower-case (APNs takes either; one spelling keeps one device one token).
    static func apnsToken(_ token: String, _ what: String) throws(LineProblem) -> String {
        guard token.utf8.allSatisfy(isHexDigit) else {
            throw LineProblem(.badToken, "\(what): an apns token is hex digits only")
        }
        let digits = token.utf8.count
        guard ImportLimits.apnsTokenHexDigits ~= digits, digits % 2 == 0 else {
            throw LineProblem(
                .badToken,
                "\(what): an apns token of \(digits) hex digits (an even number from \(ImportLimits.apnsTokenHexDigits.lowerBound) to \(ImportLimits.apnsTokenHexDigits.upperBound))")
        }
        return token.lowercased()
    }

    /// A device's APNs topic, the app's bundle id: 1 to ``ImportLimits/maxTopicIDBytes`` bytes of
    /// ASCII letters, digits, `.` and `-` (with a suffix such as `.voip`, still those).
    static func topic(_ topic: String, _ what: String) throws(LineProblem) -> String {
        guard !topic.isEmpty else { throw LineProblem(.badTopic, "\(what): empty topic") }
        guard topic.utf8.count <= ImportLimits.maxTopicIDBytes else {
            throw LineProblem(.badTopic, "\(what): topic of \(topic.utf8.count) bytes, over the limit of \(ImportLimits.maxTopicIDBytes)")
        }
        guard topic.utf8.allSatisfy({ isBundleIDByte($0) }) else {
            throw LineProblem(.badTopic, "\(what): topic \(quote(topic)) is not a bundle id (letters, digits, '.' and '-')")
        }
        return topic
    }

    /// A Web Push subscription's endpoint, the device's token: an `https://` URL with a host and no user
    /// information, of at most ``ImportLimits/maxTokenBytes`` bytes of printable ASCII. A problem never
    /// quotes it: an endpoint is a capability to push to its subscriber.
    static func endpoint(_ endpoint: String, _ what: String) throws(LineProblem) -> String {
        guard endpoint.utf8.count <= ImportLimits.maxTokenBytes else {
            throw LineProblem(
                .badEndpoint, "\(what): an endpoint of \(endpoint.utf8.count) bytes, over the limit of \(ImportLimits.maxTokenBytes)")
        }
        if let bad = endpoint.unicodeScalars.first(where: { $0.value <= 0x20 || $0.value >= 0x7F }) {
            throw LineProblem(.badEndpoint, "\(what): the endpoint holds a character outside printable ASCII (\(name(of: bad)))")
        }
        guard endpoint.hasPrefix("https://"), let parts = URLComponents(string: endpoint), parts.scheme == "https",
            let host = parts.host, !host.isEmpty
        else {
            throw LineProblem(.badEndpoint, "\(what): the endpoint is not an https URL with a host")
        }
        guard parts.user == nil, parts.password == nil else {
            throw LineProblem(.badEndpoint, "\(what): the endpoint holds a user name or password")
        }
        return endpoint
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): true
        default: false
        }
    }

    private static func isBundleIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "-"):
            true
        default: false
        }
    }

    /// A locale or time zone name: at most ``ImportLimits/maxNameBytes`` bytes, no control
    /// characters. Stored as written: the run resolves it (a locale along its fallback chain to the
    /// template folders that exist, a time zone by the system's zone database, else UTC).
    static func name(_ value: String, _ field: String, _ code: ImportSkipReason) throws(LineProblem) -> String {
        guard value.utf8.count <= ImportLimits.maxNameBytes else {
            throw LineProblem(code, "\(field) \(quote(value)) is \(value.utf8.count) bytes, over the limit of \(ImportLimits.maxNameBytes)")
        }
        if let control = firstControl(in: value) {
            throw LineProblem(code, "\(field) \(quote(value)) holds a control character (\(name(of: control)))")
        }
        return value
    }

    /// A url without control characters (anything else about it is for the run to judge).
    static func url(_ url: String, _ what: String) throws(LineProblem) -> String {
        if let control = firstControl(in: url) {
            throw LineProblem(.badURL, "\(what) \(quote(url)) holds a control character (\(name(of: control)))")
        }
        return url
    }

    /// `text` for a problem line: in quotes, control and format characters (bidirectional overrides
    /// among them) as `\u{…}`, cut after 60 characters.
    static func quote(_ text: String) -> String {
        var out = "'"
        var count = 0
        for scalar in text.unicodeScalars {
            if count == 60 {
                out += "…"
                break
            }
            if isControl(scalar) || scalar.properties.generalCategory == .format {
                out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
            count += 1
        }
        return out + "'"
    }
}
