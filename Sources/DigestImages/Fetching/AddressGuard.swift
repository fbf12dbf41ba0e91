public import DigestImageCodecs

/// Decides which addresses the downloader may connect to: none that reach the machine itself or a
/// private network — loopback, private, shared, link-local, unspecified, multicast, reserved,
/// IPv4-mapped and the IPv6 forms that embed such an IPv4 address — unless the address is in the
/// allow list (`--allow-hosts`).
public struct AddressGuard: Sendable {
    /// Ranges allowed even though internal.
    package var allowed: [AddressRange]

    package init(allowed: [AddressRange] = []) {
        self.allowed = allowed
    }

    /// Parses a comma-separated `--allow-hosts` list of addresses and CIDR ranges.
    public init(allowList: String) throws(ImageError) {
        var ranges: [AddressRange] = []
        for item in allowList.split(separator: ",") where !item.allSatisfy({ $0 == " " }) {
            guard let range = AddressRange(item) else {
                throw ImageError(.badURL, "'\(item)' is not an IP address or CIDR range", context: ["allow-hosts": allowList])
            }
            ranges.append(range)
        }
        self.init(allowed: ranges)
    }

    /// Why `address` is refused, or nil when it may be used.
    package func refusal(for address: IPAddress) -> String? {
        if allowed.contains(where: { $0.contains(address) }) { return nil }
        if let mapped = address.mappedIPv4 {
            if allowed.contains(where: { $0.contains(mapped) }) { return nil }
            return "IPv4-mapped IPv6 address"
        }
        return Self.internalCategory(address)
    }

    /// The kind of internal address, or nil for a public one.
    static func internalCategory(_ address: IPAddress) -> String? {
        if address.isIPv4 {
            for (range, name) in ipv4Internal where range.contains(address) { return name }
            return nil
        }
        for (range, name) in ipv6Internal where range.contains(address) { return name }
        // Forms that carry an IPv4 address: judge the IPv4 address.
        if AddressRange(IPAddress("64:ff9b::")!, prefixLength: 96).contains(address) {
            return internalCategory(IPAddress(bytes: Array(address.bytes[12..<16]))).map { "NAT64 of \($0)" }
        }
        if AddressRange(IPAddress("2002::")!, prefixLength: 16).contains(address) {
            return internalCategory(IPAddress(bytes: Array(address.bytes[2..<6]))).map { "6to4 of \($0)" }
        }
        return nil
    }

    private static let ipv4Internal: [(AddressRange, String)] = [
        ("0.0.0.0/8", "unspecified"), ("10.0.0.0/8", "private"), ("100.64.0.0/10", "shared (carrier NAT)"),
        ("127.0.0.0/8", "loopback"), ("169.254.0.0/16", "link-local"), ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignments"), ("192.168.0.0/16", "private"), ("198.18.0.0/15", "benchmarking"),
        ("224.0.0.0/4", "multicast"), ("240.0.0.0/4", "reserved"),
    ].map { (AddressRange($0.0)!, $0.1) }

    private static let ipv6Internal: [(AddressRange, String)] = [
        ("::/128", "unspecified"), ("::1/128", "loopback"), ("::ffff:0:0/96", "IPv4-mapped IPv6 address"),
        ("::/96", "IPv4-compatible IPv6 address"), ("64:ff9b:1::/48", "local NAT64"), ("100::/64", "discard-only"),
        ("fc00::/7", "private (unique local)"), ("fe80::/10", "link-local"), ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    ].map { (AddressRange($0.0)!, $0.1) }
}
