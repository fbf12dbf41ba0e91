import Crypto
import Foundation
import Synchronization

/// The bearer keys apps post events with: a file of one key a line (blank lines and lines starting
/// with `#` skipped), read again by ``reload()`` (`digest collect` calls it on SIGHUP). Keys are
/// kept as SHA-256 digests, so a lookup's time says nothing about how much of a key matched.
package final class AppKeys: Sendable {
    /// Where the keys are read from (`nil`: the keys given at creation, never reloaded).
    package let path: String?
    private let digests: Mutex<Set<SHA256Digest>>

    /// Reads the keys of `path`; fails when it cannot be read or holds no key.
    package init(path: String) throws(AppKeysError) {
        self.path = path
        self.digests = Mutex(try Self.read(path))
    }

    /// Fixed keys (tests, embedding).
    package init(keys: [String]) {
        self.path = nil
        self.digests = Mutex(Set(keys.map { SHA256.hash(data: Array($0.utf8)) }))
    }

    /// How many keys are in force.
    package var count: Int { digests.withLock { $0.count } }

    /// Whether `key` is one of the keys.
    package func accepts(_ key: String) -> Bool {
        let digest = SHA256.hash(data: Array(key.utf8))
        return digests.withLock { $0.contains(digest) }
    }

    /// Reads the file again and puts its keys in force; on failure the keys in force stay and the
    /// error says why. Returns how many keys are in force.
    @discardableResult
    package func reload() throws(AppKeysError) -> Int {
        guard let path else { return count }
        let keys = try Self.read(path)
        digests.withLock { $0 = keys }
        return keys.count
    }

    static func read(_ path: String) throws(AppKeysError) -> Set<SHA256Digest> {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw AppKeysError(path: path, message: "cannot be read (\(error.localizedDescription))")
        }
        var keys = Set<SHA256Digest>()
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let key = line.trimmingCharacters(in: .whitespaces)
            if key.isEmpty || key.hasPrefix("#") { continue }
            guard key.utf8.count >= 16, key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw AppKeysError(path: path, message: "line \(number + 1): a key is 16 or more printable ASCII characters without spaces")
            }
            keys.insert(SHA256.hash(data: Array(key.utf8)))
        }
        guard !keys.isEmpty else { throw AppKeysError(path: path, message: "holds no key") }
        return keys
    }
}

/// A key file that cannot be used.
package struct AppKeysError: Error, CustomStringConvertible, Equatable {
    package let path: String
    package let message: String

    package init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    package var description: String { "\(path): \(message)" }
}
