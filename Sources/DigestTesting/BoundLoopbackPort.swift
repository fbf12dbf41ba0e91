import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP socket bound to a port of 127.0.0.1 the kernel picked, never listening: while it is open no
/// other socket can take the port, and a connection to it is refused at once.
package final class BoundLoopbackPort {
    package let port: Int
    private let fd: Int32

    /// Nil when the kernel gives no socket or port.
    package init?() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            close(fd)
            return nil
        }
        self.fd = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}
