import DigestCore
import NIOCore
import PostgresNIO

/// One-dimensional arrays in PostgreSQL's binary format, written from and read into the run's own
/// values: a chunk's commit writes each column of its messages straight into its bind (no
/// `[String]` a column first, no length patched after each element as postgres-nio's arrays do),
/// and a chunk's reads come back as the bytes of each array, split here rather than element by
/// element through postgres-nio's generic decoding.
enum PostgresBinaryArray {
    /// Writes the header of a one-dimensional array of `count` elements of type `element`, no NULLs,
    /// as postgres-nio's own arrays do (an empty array has no dimension).
    static func writeHeader(_ buffer: inout ByteBuffer, count: Int, element: PostgresDataType) {
        buffer.writeInteger(count == 0 ? 0 : 1, as: Int32.self)
        buffer.writeInteger(0, as: Int32.self)
        buffer.writeInteger(element.rawValue)
        guard count > 0 else { return }
        buffer.writeInteger(Int32(count))
        buffer.writeInteger(1, as: Int32.self)
    }
}

/// The elements of a one-dimensional binary array read one after the other (a column of
/// `array_agg` rows: no NULLs, which fail the read as postgres-nio's arrays of non-optional
/// elements do).
struct PostgresArrayReader {
    private var buffer: ByteBuffer
    /// How many elements the array has.
    let count: Int

    /// Reads the array's header; throws unless `buffer` is a one-dimensional array or an empty one.
    init(_ buffer: ByteBuffer) throws(Malformed) {
        self.buffer = buffer
        guard let dimensions = self.buffer.readInteger(as: Int32.self), self.buffer.readInteger(as: Int32.self) != nil,
            self.buffer.readInteger(as: UInt32.self) != nil
        else { throw Malformed() }
        guard dimensions != 0 else {
            count = 0
            return
        }
        guard dimensions == 1, let length = self.buffer.readInteger(as: Int32.self), length >= 0,
            self.buffer.readInteger(as: Int32.self) != nil
        else { throw Malformed() }
        count = Int(length)
    }

    /// The next element's bytes.
    private mutating func next() throws(Malformed) -> ByteBuffer {
        guard let length = buffer.readInteger(as: Int32.self), length >= 0, let element = buffer.readSlice(length: Int(length))
        else { throw Malformed() }
        return element
    }

    /// The next element of an `int8[]`.
    mutating func nextInt64() throws(Malformed) -> Int64 {
        var element = try next()
        guard element.readableBytes == 8, let value = element.readInteger(as: Int64.self) else { throw Malformed() }
        return value
    }

    /// The next element of a `text[]` (or of another array of text-like elements).
    mutating func nextString() throws(Malformed) -> String {
        var element = try next()
        return element.readString(length: element.readableBytes) ?? ""
    }

    /// The next element of a `timestamptz[]` (or `timestamp[]`) as Unix seconds, rounded as
    /// `extract(epoch FROM t)::bigint` rounds them (half away from zero); ±infinity fail, as they
    /// fail that cast.
    mutating func nextUnixSeconds() throws(Malformed) -> Int64 {
        let micros = try nextInt64()  // since 2000-01-01 00:00:00 UTC
        guard micros != .max, micros != .min else { throw Malformed() }
        var seconds = micros / 1_000_000
        let rest = micros % 1_000_000
        if rest >= 500_000 { seconds += 1 } else if rest <= -500_000 { seconds -= 1 }
        return seconds + 946_684_800
    }

    struct Malformed: Error {}
}

/// A column of a chunk's messages as a `text[]` bind, written straight from the messages when the
/// statement is bound (no `[String]` a column first, no length patched after each element).
struct PostgresMessageTextColumn: PostgresNonThrowingEncodable {
    enum Column {
        case dedupeKey, week, userID, platform, variant, message, report, tokenKey, messageID, provider, target
        /// "" stands for NULL.
        case locale, headers, timing, dueLocal
    }

    let messages: [OutboxMessage]
    let column: Column

    init(_ messages: [OutboxMessage], _ column: Column) {
        self.messages = messages
        self.column = column
    }

    static var psqlType: PostgresDataType { .textArray }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        PostgresBinaryArray.writeHeader(&buffer, count: messages.count, element: .text)
        // Through the array's storage, so that each pass reads the one field rather than copying
        // every message (and retaining all its fields) as a `for … in` does.
        messages.withUnsafeBufferPointer { messages in
            for index in messages.indices {
                switch column {
                case .dedupeKey: Self.write(messages[index].dedupeKey, &buffer)
                case .week: Self.write(messages[index].week, &buffer)
                case .userID: Self.write(messages[index].userID, &buffer)
                case .platform: Self.write(messages[index].platform.rawValue, &buffer)
                case .variant: Self.write(messages[index].variant.rawValue, &buffer)
                case .message:
                    // Bytes already known to be UTF-8, as they are: the server still checks the
                    // encoding, so bad bytes fail the statement, never the data.
                    messages[index].message.withUnsafeBytes { bytes in
                        buffer.writeInteger(Int32(bytes.count))
                        buffer.writeBytes(bytes)
                    }
                case .report: Self.write(messages[index].report, &buffer)
                case .tokenKey: Self.write(messages[index].tokenKey, &buffer)
                case .messageID: Self.write(messages[index].messageID, &buffer)
                case .provider: Self.write(messages[index].provider.rawValue, &buffer)
                case .target: Self.write(messages[index].target, &buffer)
                case .locale: Self.write(messages[index].locale ?? "", &buffer)
                case .headers: Self.write(messages[index].headers ?? "", &buffer)
                case .timing: Self.write(messages[index].timing?.rawValue ?? "", &buffer)
                case .dueLocal: Self.write(messages[index].dueLocal ?? "", &buffer)
                }
            }
        }
    }

    private static func write(_ value: String, _ buffer: inout ByteBuffer) {
        var value = value
        value.withUTF8 { bytes in
            buffer.writeInteger(Int32(bytes.count))
            buffer.writeBytes(UnsafeRawBufferPointer(bytes))
        }
    }
}

/// A column of a chunk's messages as an `int8[]` bind (0 stands for NULL), written straight from them.
struct PostgresMessageInt8Column: PostgresNonThrowingEncodable {
    enum Column { case availableAt, windowEnd, quietUntil, expiresAt }

    let messages: [OutboxMessage]
    let column: Column

    init(_ messages: [OutboxMessage], _ column: Column) {
        self.messages = messages
        self.column = column
    }

    static var psqlType: PostgresDataType { .int8Array }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        PostgresBinaryArray.writeHeader(&buffer, count: messages.count, element: .int8)
        buffer.reserveCapacity(minimumWritableBytes: messages.count * 12)
        messages.withUnsafeBufferPointer { messages in
            for index in messages.indices {
                let value: Int64 =
                    switch column {
                    case .availableAt: messages[index].availableAt
                    case .windowEnd: messages[index].windowEnd ?? 0
                    case .quietUntil: messages[index].quietUntil ?? 0
                    case .expiresAt: messages[index].expiresAt ?? 0
                    }
                buffer.writeInteger(8, as: Int32.self)
                buffer.writeInteger(value)
            }
        }
    }
}

/// A `text[]` bind encoded once and bound again and again as it is (the run's candidate articles,
/// the same for every chunk).
struct PostgresEncodedTextArray: PostgresNonThrowingEncodable {
    let bytes: ByteBuffer

    /// `values` as postgres-nio encodes them.
    init(_ values: [String]) {
        var buffer = ByteBuffer()
        values.encode(into: &buffer, context: .default)
        bytes = buffer
    }

    static var psqlType: PostgresDataType { .textArray }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        buffer.writeImmutableBuffer(bytes)
    }
}
