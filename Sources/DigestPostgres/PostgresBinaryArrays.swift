import NIOCore
import PostgresNIO

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
