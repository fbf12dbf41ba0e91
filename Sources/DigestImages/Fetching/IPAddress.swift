#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as its network-order bytes (4 or 16).
package struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    package let bytes: [UInt8]

    package var isIPv4: Bool { bytes.count == 4 }

    init(bytes: [UInt8]) {
        precondition(bytes.count == 4 || bytes.count == 16)
        self.bytes = bytes
    }

    /// Parses a literal (`203.0.113.7`, `2001:db8::1`, `[2001:db8::1]`); nil when it is not one.
    package init?(_ text: some StringProtocol) {
        var literal = String(text)
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            self.bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, literal, &v6) == 1 {
            self.bytes = withUnsafeBytes(of: &v6) { Array($0) }
            return
        }
        return nil
    }

    /// The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
    package var mappedIPv4: IPAddress? {
        guard bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF else { return nil }
        return IPAddress(bytes: Array(bytes[12..<16]))
    }

    package var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = isIPv4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        guard ok else { return bytes.map { String($0) }.joined(separator: ".") }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An address range in CIDR notation (`10.0.0.0/8`, `fd00::/8`); a bare address is a range of one.
package struct AddressRange: Sendable, Hashable, CustomStringConvertible {
    package let network: IPAddress
    package let prefixLength: Int

    package init(_ network: IPAddress, prefixLength: Int) {
        precondition(prefixLength >= 0 && prefixLength <= network.bytes.count * 8)
        self.network = network
        self.prefixLength = prefixLength
    }

    /// Parses `ADDRESS` or `ADDRESS/PREFIX`; nil when malformed.
    package init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0].trimmingSpaces) else { return nil }
        var length = address.bytes.count * 8
        if parts.count == 2 {
            guard let value = Int(parts[1].trimmingSpaces), value >= 0, value <= length else { return nil }
            length = value
        }
        self.init(address, prefixLength: length)
    }

    /// Whether `address` (same family) lies in the range.
    package func contains(_ address: IPAddress) -> Bool {
        guard address.bytes.count == network.bytes.count else { return false }
        var remaining = prefixLength
        for (a, b) in zip(address.bytes, network.bytes) {
            if remaining <= 0 { return true }
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if a & mask != b & mask { return false }
            remaining -= bits
        }
        return true
    }

    package var description: String { "\(network)/\(prefixLength)" }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
