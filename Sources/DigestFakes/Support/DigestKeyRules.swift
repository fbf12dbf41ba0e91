/// The shapes of the digest's own keys (docs/014-messages.md) every fake checks where a message
/// carries them: `reply_key` 22 base64url characters (``ReplyKeys``' 16 bytes of HMAC), `picks` a
/// decimal string (FCM data values are strings), `aps.category` a string, at most two web buttons.
/// A key that is absent is not checked: messages without a reply key have none.
package enum DigestKeyRules {
    package static let replyKeyLength = 22
    package static let maxWebActions = 2

    /// What is wrong with a message's data keys (`reply_key`, `picks`), or nil.
    package static func dataViolation(replyKey: String?, picks: String?, at path: String) -> String? {
        if let replyKey, !isReplyKey(replyKey) {
            return "Invalid value at '\(path).reply_key': \(replyKeyLength) base64url characters expected"
        }
        if let picks, !isDecimal(picks) {
            return "Invalid value at '\(path).picks': a decimal string expected"
        }
        return nil
    }

    /// 22 characters of the base64url alphabet, no padding.
    package static func isReplyKey(_ text: String) -> Bool {
        text.utf8.count == replyKeyLength && text.utf8.allSatisfy { byte in
            (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
        }
    }

    /// One to nine ASCII digits, no sign.
    package static func isDecimal(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 9 && text.utf8.allSatisfy { (0x30...0x39).contains($0) }
    }
}
