/// Reads the orientation tag (0x0112) from an EXIF block (the APP1 payload after `Exif\0\0`).
package enum ExifOrientation {
    /// The orientation, or `.up` when the block has none or is malformed.
    static func read(_ exif: UnsafeRawBufferPointer) -> Orientation {
        let bytes = exif.bindMemory(to: UInt8.self)
        guard bytes.count >= 8 else { return .up }
        let bigEndian: Bool
        switch (bytes[0], bytes[1]) {
        case (0x49, 0x49): bigEndian = false  // "II"
        case (0x4D, 0x4D): bigEndian = true  // "MM"
        default: return .up
        }
        func u16(_ at: Int) -> Int? {
            guard at >= 0, at + 2 <= bytes.count else { return nil }
            let a = Int(bytes[at]), b = Int(bytes[at + 1])
            return bigEndian ? (a << 8 | b) : (b << 8 | a)
        }
        func u32(_ at: Int) -> Int? {
            guard let high = u16(bigEndian ? at : at + 2), let low = u16(bigEndian ? at + 2 : at) else { return nil }
            return high << 16 | low
        }
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return .up }
        for index in 0..<min(count, 512) {
            let entry = ifd + 2 + index * 12
            guard let tag = u16(entry) else { return .up }
            if tag == 0x0112 {
                guard let type = u16(entry + 2), type == 3, let value = u16(entry + 8) else { return .up }
                return Orientation(rawValue: value) ?? .up
            }
        }
        return .up
    }

    /// A minimal EXIF block (for APP1, with the `Exif\0\0` prefix) carrying only `orientation`.
    package static func block(orientation: Int, bigEndian: Bool = false) -> [UInt8] {
        func u16(_ v: Int) -> [UInt8] { bigEndian ? [UInt8(v >> 8), UInt8(v & 0xFF)] : [UInt8(v & 0xFF), UInt8(v >> 8)] }
        func u32(_ v: Int) -> [UInt8] { bigEndian ? u16(v >> 16) + u16(v & 0xFFFF) : u16(v & 0xFFFF) + u16(v >> 16) }
        var out: [UInt8] = Array("Exif".utf8) + [0, 0]
        out += bigEndian ? [0x4D, 0x4D] : [0x49, 0x49]
        out += u16(42) + u32(8)
        out += u16(1)  // one entry
        out += u16(0x0112) + u16(3) + u32(1) + u16(orientation) + u16(0)
        out += u32(0)  // no next IFD
        return out
    }
}
