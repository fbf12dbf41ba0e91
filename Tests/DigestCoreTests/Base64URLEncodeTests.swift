import Testing

@testable import DigestCore

/// The hand-written base64url encoder against Python's `base64.urlsafe_b64encode` (padding
/// stripped), for every remainder, and decoding back.
@Suite struct Base64URLEncodeTests {
    @Test func everyLengthAsPythonWritesIt() {
        let expected = ["", "-g", "-vk", "-vn4", "-vn49w", "-vn49_Y", "-vn49_b1", "-vn49_b19A"]
        for (count, text) in expected.enumerated() {
            let bytes = (0..<count).map { UInt8(250 - $0) }
            #expect(Base64URL.encode(bytes) == text, "\(count) bytes")
            #expect(Base64URL.decode(text) == bytes, "\(count) bytes back")
        }
        let all = (0...255).map(UInt8.init)
        #expect(Base64URL.decode(Base64URL.encode(all)) == all)
    }
}
