import NIOCore
import PostgresNIO

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
