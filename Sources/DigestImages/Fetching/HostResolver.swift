#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DigestImageCodecs
import NIOPosix

/// Resolves host names with the system resolver (`getaddrinfo`) on a thread pool, so the addresses
/// the guard checks are the ones the downloader then connects to.
struct HostResolver: Sendable {
    let threadPool: NIOThreadPool

    /// Every address of `host` (a literal resolves to itself).
    func resolve(_ host: String) async throws(ImageError) -> [IPAddress] {
        if let literal = IPAddress(host) { return [literal] }
        do {
            return try await threadPool.runIfActive { () throws -> [IPAddress] in try Self.lookUp(host) }
        } catch let error as ImageError {
            throw error
        } catch {
            throw ImageError(.dnsFailed, "cannot resolve the host: \(error)", context: ["host": host])
        }
    }

    private static func lookUp(_ host: String) throws(ImageError) -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let list else {
            let message = String(cString: gai_strerror(status))
            throw ImageError(.dnsFailed, "cannot resolve the host: \(message)", context: ["host": host, "getaddrinfo": "\(status)"])
        }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var node: UnsafeMutablePointer<addrinfo>? = list
        while let current = node {
            if let sockaddr = current.pointee.ai_addr {
                switch current.pointee.ai_family {
                case AF_INET:
                    sockaddr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        var address = v4.pointee.sin_addr
                        addresses.append(IPAddress(bytes: withUnsafeBytes(of: &address) { Array($0) }))
                    }
                case AF_INET6:
                    sockaddr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var address = v6.pointee.sin6_addr
                        addresses.append(IPAddress(bytes: withUnsafeBytes(of: &address) { Array($0) }))
                    }
                default: break
                }
            }
            node = current.pointee.ai_next
        }
        var seen = Set<IPAddress>()
        addresses = addresses.filter { seen.insert($0).inserted }
        guard !addresses.isEmpty else { throw ImageError(.dnsFailed, "the host has no addresses", context: ["host": host]) }
        return addresses
    }
}
