#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive lock on a file (`flock`), held until released or the process ends, even by SIGKILL.
public final class RunLock: Sendable {
    public let path: String
    private let descriptor: Int32

    /// Takes the lock or fails at once naming the file.
    public init(path: String) throws(RunLockError) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let code = errno
            throw RunLockError(path: path, message: "cannot open lock file: \(String(cString: strerror(code))) (errno \(code))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK {
                throw RunLockError(path: path, message: "another digest run holds the lock on this database", isHeld: true)
            }
            throw RunLockError(path: path, message: "cannot lock the lock file: \(String(cString: strerror(code))) (errno \(code))")
        }
        self.path = path
        self.descriptor = fd
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}

/// The run lock is held elsewhere or cannot be taken.
public struct RunLockError: Error, CustomStringConvertible {
    public let path: String
    public let message: String
    /// Another process holds the lock (rather than the file being unusable).
    public let isHeld: Bool

    public init(path: String, message: String, isHeld: Bool = false) {
        self.path = path
        self.message = message
        self.isHeld = isHeld
    }

    public var description: String { "\(path): \(message)" }
}
