package import DigestCore
import Synchronization

/// The `--reply-key-file` of `digest collect`: ``ReplyKeys`` read from a file, read again by
/// ``reload()`` (on SIGHUP, with the app keys); on a failed reload the keys in force stay.
package final class ReplyKeyFile: Sendable {
    /// Where the secrets are read from (`nil`: fixed at creation).
    package let path: String?
    private let current: Mutex<ReplyKeys>

    package init(path: String) throws(ReplyKeysError) {
        self.path = path
        self.current = Mutex(try ReplyKeys(path: path))
    }

    /// Fixed keys (tests, embedding).
    package init(_ keys: ReplyKeys) {
        self.path = nil
        self.current = Mutex(keys)
    }

    /// The keys in force.
    package var keys: ReplyKeys { current.withLock { $0 } }

    /// Reads the file again; returns how many secrets verify.
    @discardableResult
    package func reload() throws(ReplyKeysError) -> Int {
        guard let path else { return keys.count }
        let keys = try ReplyKeys(path: path)
        current.withLock { $0 = keys }
        return keys.count
    }
}
