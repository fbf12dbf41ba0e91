/// Reads one line of a JSON Lines file into a ``JSONValue``: strict RFC 8259 on UTF-8 bytes, with
/// nesting bounded by ``ImportLimits/maxNesting`` (checked on the way down, so the recursion stays
/// shallow however deep the line tries to go), a lone surrogate in a `\u` escape refused, and a key
/// given twice in an object refused. Foundation's `JSONDecoder` is not used for lines: it cannot tell
/// a bad number from bad JSON, takes the first of two equal keys and accepts numbers like `01`.
package struct JSONLineParser {
    private let bytes: [UInt8]
    private let maxNesting: Int
    private var index = 0

    private init(bytes: [UInt8], maxNesting: Int) {
        self.bytes = bytes
        self.maxNesting = maxNesting
    }

    /// The value of a whole line (whitespace around it allowed, nothing else).
    package static func parse(_ bytes: [UInt8], maxNesting: Int = ImportLimits.maxNesting) throws(LineProblem) -> JSONValue {
        if let bad = firstInvalidUTF8(bytes) {
            throw LineProblem(.notUTF8, "not UTF-8 (byte \(bad + 1) is 0x\(hex(bytes[bad])))")
        }
        var parser = JSONLineParser(bytes: bytes, maxNesting: maxNesting)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else {
            throw parser.problem("more after the JSON value")
        }
        return value
    }

    /// The value of one whole JSON document (a request body): a byte-order mark at its start is
    /// dropped, whitespace and line breaks around and inside the value are allowed, nothing else after
    /// it. Problems are the import's (``LineProblem``: `bad_json`, `not_utf8`, `too_deep`, …).
    package static func document(_ bytes: [UInt8], maxNesting: Int = ImportLimits.maxNesting) throws(LineProblem) -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { return try parse(Array(bytes.dropFirst(3)), maxNesting: maxNesting) }
        return try parse(bytes, maxNesting: maxNesting)
    }

    /// The offset of the first byte that does not belong to well-formed UTF-8 (overlong forms,
    /// surrogates and code points past U+10FFFF included), or `nil`.
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        guard bytes.contains(where: { $0 >= 0x80 }) else { return nil }
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }

    private func problem(_ what: String, at position: Int? = nil) -> LineProblem {
        let at = position ?? index
        guard at < bytes.count else { return LineProblem(.badJSON, "not JSON: \(what) at the end of the line") }
        return LineProblem(.badJSON, "not JSON: \(what) at byte \(at + 1)")
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func value(depth: Int) throws(LineProblem) -> JSONValue {
        guard index < bytes.count else { throw problem("a value expected") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw problem("unexpected character")
        }
    }

    private mutating func enter(_ depth: Int) throws(LineProblem) {
        guard depth <= maxNesting else {
            throw LineProblem(.tooDeep, "objects and lists nest deeper than \(maxNesting) (at byte \(index + 1))")
        }
        index += 1
        skipWhitespace()
    }

    private mutating func object(depth: Int) throws(LineProblem) -> JSONValue {
        try enter(depth)
        var fields: [String: JSONValue] = [:]
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(fields)
        }
        while true {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw problem("a key expected") }
            let keyStart = index
            let key = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw problem("':' expected") }
            index += 1
            skipWhitespace()
            let value = try value(depth: depth)
            if fields.updateValue(value, forKey: key) != nil {
                throw problem("the key \(ImportFieldRules.quote(key)) given twice", at: keyStart)
            }
            skipWhitespace()
            guard index < bytes.count else { throw problem("'}' expected") }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(fields)
            }
            guard bytes[index] == UInt8(ascii: ",") else { throw problem("',' or '}' expected") }
            index += 1
            skipWhitespace()
        }
    }

    private mutating func array(depth: Int) throws(LineProblem) -> JSONValue {
        try enter(depth)
        var elements: [JSONValue] = []
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try value(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw problem("']' expected") }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            guard bytes[index] == UInt8(ascii: ",") else { throw problem("',' or ']' expected") }
            index += 1
            skipWhitespace()
        }
    }

    private mutating func literal(_ word: StaticString) throws(LineProblem) {
        let count = word.utf8CodeUnitCount
        let matches = word.withUTF8Buffer { expected in
            index + count <= bytes.count && (0..<count).allSatisfy { bytes[index + $0] == expected[$0] }
        }
        guard matches else { throw problem("unexpected character") }
        index += count
    }

    private mutating func digits() -> Int {
        let start = index
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
        return index - start
    }

    private mutating func number() throws(LineProblem) -> String {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") else {
            throw problem("a digit expected")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                throw problem("a number with a leading zero")
            }
        } else {
            _ = digits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw problem("a digit expected") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw problem("a digit expected") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// A string, from its opening quote; the bytes are known to be UTF-8.
    private mutating func string() throws(LineProblem) -> String {
        index += 1
        let start = index
        // Without escapes the string is its bytes.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return String(decoding: bytes[start..<(index - 1)], as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw problem("a control character (U+00\(Self.hex(byte))) inside a string") }
            index += 1
        }
        var out = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try escape(into: &out)
            case 0x00..<0x20:
                throw problem("a control character (U+00\(Self.hex(byte))) inside a string")
            default:
                out.append(byte)
                index += 1
            }
        }
        throw problem("the string is not closed")
    }

    private mutating func escape(into out: inout [UInt8]) throws(LineProblem) {
        let at = index
        index += 1
        guard index < bytes.count else { throw problem("the string is not closed") }
        let letter = bytes[index]
        index += 1
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(letter)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var value = try hex4(at: at)
            if (0xDC00...0xDFFF).contains(value) {
                throw LineProblem(.loneSurrogate, "a lone low surrogate \\u\(String(value, radix: 16, uppercase: true)) at byte \(at + 1)")
            }
            if (0xD800...0xDBFF).contains(value) {
                let high = value
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw LineProblem(.loneSurrogate, "a lone high surrogate \\u\(String(high, radix: 16, uppercase: true)) at byte \(at + 1)")
                }
                let lowAt = index
                index += 2
                let low = try hex4(at: lowAt)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw LineProblem(.loneSurrogate, "a lone high surrogate \\u\(String(high, radix: 16, uppercase: true)) at byte \(at + 1)")
                }
                value = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let scalar = Unicode.Scalar(value) else { throw problem("a bad \\u escape", at: at) }
            UTF8.encode(scalar) { out.append($0) }
        default:
            throw problem("a bad escape", at: at)
        }
    }

    /// Four hex digits after `\u` (at `index`).
    private mutating func hex4(at escapeStart: Int) throws(LineProblem) -> UInt32 {
        guard index + 4 <= bytes.count else { throw problem("a bad \\u escape", at: escapeStart) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw problem("a bad \\u escape", at: escapeStart)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
