import Crypto
import Foundation

/// The secrets that sign and verify a message's `reply_key` (`--reply-key-file`, docs/009): a
/// button's press changes a reader's preferences only with the key of that reader's own message.
///
/// A message's reply key is the first 16 bytes of HMAC-SHA256, keyed with a secret's UTF-8 bytes,
/// over its 32-character `message_id` as ASCII, in base64url without padding (22 characters). The
/// file holds one secret a line (surrounding spaces trimmed; blank lines and `#` comments skipped):
/// the first signs, every one verifies, so a secret is rotated by adding the new one first, and
/// removing the old one once the messages it signed have expired.
package struct ReplyKeys: Sendable {
    /// An HMAC started with each key, the signing one first: each message copies one and hashes its
    /// id (the key's padding is hashed once, not once a message).
    private let keys: [HMAC<SHA256>]

    /// A secret is at least this many bytes.
    package static let minimumSecretBytes = 16
    /// A reply key's length in characters.
    package static let keyLength = 22

    /// Keys from their secrets, the signing one first.
    package init(secrets: [String]) throws(ReplyKeysError) {
        guard !secrets.isEmpty else { throw ReplyKeysError("holds no secret") }
        for (index, secret) in secrets.enumerated() where secret.utf8.count < Self.minimumSecretBytes {
            throw ReplyKeysError("secret \(index + 1) is \(secret.utf8.count) bytes: at least \(Self.minimumSecretBytes)")
        }
        keys = secrets.map { HMAC<SHA256>(key: SymmetricKey(data: Array($0.utf8))) }
    }

    /// Keys from a `--reply-key-file`.
    package init(path: String) throws(ReplyKeysError) {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ReplyKeysError("\(path) cannot be read (\(error.localizedDescription))")
        }
        let secrets = text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        do {
            try self.init(secrets: secrets)
        } catch {
            throw ReplyKeysError("\(path): \(error.message)")
        }
    }

    /// How many secrets verify.
    package var count: Int { keys.count }

    /// The reply key of a message: the signing secret's.
    package func sign(messageID: String) -> String {
        Self.key(keys[0], messageID: messageID)
    }

    /// Whether `replyKey` is the reply key of `messageID` under any of the secrets (compared in
    /// constant time).
    package func verifies(_ replyKey: String, messageID: String) -> Bool {
        guard replyKey.utf8.count == Self.keyLength else { return false }
        var matched = false
        for key in keys {
            let expected = Self.key(key, messageID: messageID)
            var difference: UInt8 = 0
            for (a, b) in zip(expected.utf8, replyKey.utf8) { difference |= a ^ b }
            matched = matched || difference == 0
        }
        return matched
    }

    private static func key(_ key: HMAC<SHA256>, messageID: String) -> String {
        var hmac = key
        hmac.update(data: Array(messageID.utf8))
        let mac = hmac.finalize()
        return Base64URL.encode(Array(Array(mac).prefix(16)))
    }
}

/// A reply key file or secret that cannot be used.
package struct ReplyKeysError: Error, CustomStringConvertible, Equatable {
    package let message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}
