import Foundation
#if canImport(Glibc)
import Glibc
#endif
package import NIOCore

/// Which push services the Web Push sender may contact. A subscription's endpoint comes from a
/// browser, through the site that stored it: it is an untrusted URL, and sending to it makes this
/// machine open a TLS connection wherever it points. So by default only the browsers' push services
/// are contacted (``knownServices``), `--allow-push-hosts` adds more by name or address, and an
/// address that is loopback, private, link-local or otherwise not public is connected to only when
/// the operator listed it (or listed the name that resolves to it): a push service's name that
/// resolves to an inside address is refused at connect time.
///
/// ```swift
/// let policy = try PushHostPolicy(allowing: ["push.example.net", "127.0.0.1"])
/// policy.allows(host: "fcm.googleapis.com")   // true: a known push service
/// policy.allows(host: "evil.example")         // false
/// ```
package struct PushHostPolicy: Sendable {
    /// The browsers' push services: an exact host, or with a leading dot any host under the domain.
    /// Chrome (FCM; `android.googleapis.com` in subscriptions made before 2016), Firefox (Mozilla's
    /// autopush), Safari (Apple), Edge's legacy subscriptions (Windows Push Notification Services).
    package static let knownServices = [
        "fcm.googleapis.com", "android.googleapis.com", "updates.push.services.mozilla.com", "web.push.apple.com", ".notify.windows.com",
    ]

    /// Host names the operator listed, lower-case, without a trailing dot.
    let listedNames: Set<String>
    /// Addresses the operator listed (their bytes: 4 for IPv4, 16 for IPv6).
    let listedAddresses: Set<[UInt8]>

    /// The known push services plus `allowing` (host names or IP addresses, an IPv6 address with or
    /// without brackets). Throws for an entry that is neither (a URL, a port, a wildcard).
    package init(allowing: [String]) throws(SenderError) {
        var names = Set<String>(), addresses = Set<[UInt8]>()
        for entry in allowing {
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { continue }
            if let bytes = Self.addressBytes(trimmed) {
                addresses.insert(bytes)
            } else if Self.isHostName(trimmed) {
                names.insert(Self.normalized(trimmed))
            } else {
                throw SenderError(
                    .configuration,
                    "--allow-push-hosts: \(trimmed.prefix(80)) is not a host name or an IP address (no scheme, port, path or wildcard: push.example.net, 10.0.0.5, ::1)")
            }
        }
        listedNames = names
        listedAddresses = addresses
    }

    /// Whether requests may go to `host` (a name or an address literal, as in the endpoint) at all.
    package func allows(host: String) -> Bool {
        let host = Self.normalized(host)
        if let bytes = Self.addressBytes(host) { return listedAddresses.contains(bytes) }
        if listedNames.contains(host) { return true }
        return Self.knownServices.contains { $0.hasPrefix(".") ? host.hasSuffix($0) : host == $0 }
    }

    /// Whether a connection to `address`, which `host` resolved to, may be made: a public address
    /// always (for a host ``allows(host:)``), another only when it or `host` was listed by the operator.
    package func allows(address: SocketAddress, of host: String) -> Bool {
        guard let bytes = Self.bytes(of: address) else { return false }
        if Self.isPublic(bytes) { return true }
        return listedAddresses.contains(bytes) || listedNames.contains(Self.normalized(host))
    }

    /// A host as compared: lower-case, no brackets around an IPv6 address, no trailing dot.
    static func normalized(_ host: String) -> String {
        var host = host.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.hasSuffix(".") { host.removeLast() }
        return host
    }

    /// Letters, digits, hyphens and dots, in labels of 1 to 63 characters; at most 253 in all.
    static func isHostName(_ text: String) -> Bool {
        let name = normalized(text)
        guard (1...253).contains(name.utf8.count) else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.utf8.count) && label.utf8.allSatisfy { byte in
                (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D
            } && label.first != "-" && label.last != "-"
        }
    }

    /// The bytes of an IPv4 or IPv6 address literal (brackets allowed), nil for anything else.
    static func addressBytes(_ text: String) -> [UInt8]? {
        let literal = normalized(text)
        guard literal.contains(":") || literal.allSatisfy({ $0.isNumber || $0 == "." }) else { return nil }
        guard let address = try? SocketAddress(ipAddress: literal, port: 0) else { return nil }
        return bytes(of: address)
    }

    /// An address's bytes (an IPv4-mapped IPv6 address as its IPv4 bytes); nil for a Unix socket.
    static func bytes(of address: SocketAddress) -> [UInt8]? {
        guard let text = address.ipAddress else { return nil }
        if case .v4 = address {
            var bytes = [UInt8](repeating: 0, count: 4)
            return inet_pton(AF_INET, text, &bytes) == 1 ? bytes : nil
        }
        var bytes = [UInt8](repeating: 0, count: 16)
        guard inet_pton(AF_INET6, text, &bytes) == 1 else { return nil }
        if bytes.prefix(10).allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return Array(bytes.suffix(4)) }
        return bytes
    }

    /// Whether an address (4 or 16 bytes) is a public unicast address: not unspecified, loopback,
    /// private (RFC 1918, unique local), shared (RFC 6598), link-local, multicast, documentation or
    /// reserved.
    static func isPublic(_ bytes: [UInt8]) -> Bool {
        if bytes.count == 4 {
            let (a, b) = (bytes[0], bytes[1])
            switch a {
            case 0, 10, 127: return false
            case 100 where (64...127).contains(b): return false  // shared address space
            case 169 where b == 254: return false  // link-local
            case 172 where (16...31).contains(b): return false
            case 192 where b == 168: return false
            case 192 where b == 0 && bytes[2] == 2, 198 where b == 51 && bytes[2] == 100, 203 where b == 0 && bytes[2] == 113: return false  // documentation
            case 198 where b == 18 || b == 19: return false  // benchmarking
            case 224...255: return false  // multicast, reserved, broadcast
            default: return true
            }
        }
        guard bytes.count == 16 else { return false }
        if bytes.allSatisfy({ $0 == 0 }) { return false }  // ::
        if bytes.prefix(15).allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return false }  // ::1
        if bytes[0] & 0xFE == 0xFC { return false }  // fc00::/7 unique local
        if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return false }  // fe80::/10 link-local
        if bytes[0] == 0xFF { return false }  // multicast
        if bytes[0] == 0x20 && bytes[1] == 0x01 && bytes[2] == 0x0D && bytes[3] == 0xB8 { return false }  // 2001:db8::/32 documentation
        return bytes[0] & 0xE0 == 0x20  // 2000::/3, global unicast
    }
}

/// A push service's host resolved to an address the policy does not allow (``PushHostPolicy``).
struct PushAddressNotAllowed: Error, CustomStringConvertible {
    let host: String
    let address: String

    /// The failure's code when a request meets it.
    static let code = "HOST_NOT_ALLOWED"

    var description: String {
        "\(host) resolves to \(address), which is not a public address: list it with --allow-push-hosts to send there"
    }
}
