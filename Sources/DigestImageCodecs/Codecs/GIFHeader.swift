/// The logical screen size of a GIF (bytes 6…9, little-endian), read without decoding.
package struct GIFHeader {
    package let width: Int
    package let height: Int

    package init(_ bytes: [UInt8]) throws(ImageError) {
        guard bytes.count >= 13 else { throw ImageError(.truncated, "the GIF ends inside its header", context: ["bytes": "\(bytes.count)"]) }
        width = Int(bytes[6]) | Int(bytes[7]) << 8
        height = Int(bytes[8]) | Int(bytes[9]) << 8
        // A GIF must end with the trailer byte; one that does not was cut off.
        guard bytes.last == 0x3B else { throw ImageError(.truncated, "the GIF has no trailer (0x3B)") }
    }
}
