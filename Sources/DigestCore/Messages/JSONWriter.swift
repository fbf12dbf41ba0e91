/// A small JSON writer with a fixed key order, so the same message always has the same bytes.
///
/// Strings keep non-ASCII text as UTF-8 (budgets count those bytes); `"`, `\` and control characters
/// are escaped.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// Open objects and arrays, innermost in bit 0: a set bit means the next value needs a comma.
    private var needsComma: UInt64 = 0
    /// How many objects and arrays are open (at most 64).
    private var depth = 0

    public init(capacity: Int = 1024) {
        bytes.reserveCapacity(capacity)
    }

    public var string: String { String(decoding: bytes, as: UTF8.self) }

    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        open()
    }

    public mutating func endObject() {
        close()
        bytes.append(UInt8(ascii: "}"))
    }

    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        open()
    }

    public mutating func endArray() {
        close()
        bytes.append(UInt8(ascii: "]"))
    }

    /// Writes `"key":`; the value written next belongs to it.
    public mutating func key(_ key: String) {
        separate()
        appendString(key)
        bytes.append(UInt8(ascii: ":"))
        needsComma &= ~1
    }

    public mutating func value(_ text: String) {
        separate()
        appendString(text)
    }

    public mutating func value(_ number: Int) {
        separate()
        bytes.append(contentsOf: String(number).utf8)
    }

    public mutating func value(_ flag: Bool) {
        separate()
        bytes.append(contentsOf: (flag ? "true" : "false").utf8)
    }

    /// Appends already-serialized JSON as one value.
    public mutating func raw(_ json: [UInt8]) {
        separate()
        bytes.append(contentsOf: json)
    }

    /// Writes `replacement` over as many bytes at `position` (a placeholder of the same length).
    package mutating func overwrite(at position: Int, with replacement: some Collection<UInt8>) {
        bytes.replaceSubrange(position..<(position + replacement.count), with: replacement)
    }

    public mutating func field(_ name: String, _ text: String) {
        key(name)
        value(text)
    }

    public mutating func field(_ name: String, _ number: Int) {
        key(name)
        value(number)
    }

    private mutating func open() {
        precondition(depth < 64, "JSONWriter nests at most 64 levels")
        depth += 1
        needsComma <<= 1
    }

    private mutating func close() {
        precondition(depth > 0, "JSONWriter: close without open")
        depth -= 1
        needsComma >>= 1
    }

    private mutating func separate() {
        guard depth > 0 else { return }
        if needsComma & 1 == 1 { bytes.append(UInt8(ascii: ",")) }
        needsComma |= 1
    }

    private mutating func appendString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        // `withUTF8` gives small strings a contiguous buffer too.
        text.withUTF8 { buffer in
            var start = 0
            var index = 0
            while index < buffer.count {
                // Eight bytes at a time past the runs that need no escape (most text is one run).
                while index + 8 <= buffer.count,
                    !Self.needsEscape(UnsafeRawPointer(buffer.baseAddress! + index).loadUnaligned(as: UInt64.self))
                {
                    index += 8
                }
                guard index < buffer.count else { break }
                let byte = buffer[index]
                index += 1
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start..<(index - 1)]))
                start = index
                switch byte {
                case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
                case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
                case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
                case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Whether any of the eight bytes of `word` is a control character, `"` or `\` (exact: the
    /// borrows of the zero-byte test only mark bytes above one that is flagged anyway).
    @inline(__always)
    private static func needsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ value: UInt64) -> Bool { (value &- ones) & ~value & high != 0 }
        let below0x20 = (word &- ones &* 0x20) & ~word & high != 0
        return below0x20 || hasZeroByte(word ^ (ones &* 0x22)) || hasZeroByte(word ^ (ones &* 0x5C))
    }

    /// `text` as a JSON string literal.
    public static func quoted(_ text: String) -> String {
        var writer = JSONWriter(capacity: text.utf8.count + 2)
        writer.value(text)
        return writer.string
    }
}
