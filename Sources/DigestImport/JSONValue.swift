/// One JSON value of an import line, as ``JSONLineParser`` reads it. Numbers keep their text, so a
/// field can tell a whole number from a fraction or an overflow exactly.
package enum JSONValue {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// How a problem names the kind of value found.
    package var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "a list"
        case .object: "an object"
        }
    }

    /// The value of a JSON number's text as a whole number, if it is one: `6`, `-0`, `6.0` and `1e2`
    /// are; `1.5` and `1e-400` are fractions, `1e400` and `9223372036854775808` overflow.
    enum Integer: Equatable {
        case value(Int64)
        case fraction
        case overflow
    }

    /// ``Integer`` of a number's text (the parser has checked its grammar).
    static func integer(_ text: String) -> Integer {
        var negative = false
        var digits: [UInt8] = []
        var fractionDigits = 0
        var exponent = 0
        var exponentNegative = false
        var part = 0  // 0: whole part, 1: fraction, 2: exponent
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-") where part == 0: negative = true
            case UInt8(ascii: "-"): exponentNegative = true
            case UInt8(ascii: "+"): break
            case UInt8(ascii: "."): part = 1
            case UInt8(ascii: "e"), UInt8(ascii: "E"): part = 2
            default:
                let digit = byte &- UInt8(ascii: "0")
                if part == 2 {
                    // Saturate: any exponent this large over- or underflows alike.
                    exponent = min(exponent * 10 + Int(digit), 1_000_000)
                } else {
                    if digits.isEmpty && digit == 0 {
                        if part == 1 { fractionDigits += 1 }
                        continue
                    }
                    digits.append(digit)
                    if part == 1 { fractionDigits += 1 }
                }
            }
        }
        // value = digits × 10^scale
        var scale = (exponentNegative ? -exponent : exponent) - fractionDigits
        while let last = digits.last, last == 0 {
            digits.removeLast()
            scale += 1
        }
        if digits.isEmpty { return .value(0) }
        if scale < 0 { return .fraction }
        if digits.count + scale > 19 { return .overflow }
        var magnitude: UInt64 = 0
        for digit in digits + [UInt8](repeating: 0, count: scale) {
            let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(digit))
            if o1 || o2 { return .overflow }
            magnitude = sum
        }
        if negative {
            if magnitude == UInt64(Int64.max) + 1 { return .value(Int64.min) }
            return magnitude <= UInt64(Int64.max) ? .value(-Int64(magnitude)) : .overflow
        }
        return magnitude <= UInt64(Int64.max) ? .value(Int64(magnitude)) : .overflow
    }
}
