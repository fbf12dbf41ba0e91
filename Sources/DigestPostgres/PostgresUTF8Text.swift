import NIOCore
import PostgresNIO

/// Bytes already known to be UTF-8 (an encoded message), bound as `text` without first becoming a
/// `String`. The server still checks the encoding, so bad bytes fail the statement, never the data.
struct PostgresUTF8Text: PostgresNonThrowingEncodable, PostgresArrayEncodable {
    let bytes: [UInt8]

    static var psqlType: PostgresDataType { .text }
    static var psqlFormat: PostgresFormat { .binary }
    static var psqlArrayType: PostgresDataType { .textArray }

    func encode<JSONEncoder: PostgresJSONEncoder>(into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        byteBuffer.writeBytes(bytes)
    }
}
