import Foundation
import DigestStore

/// What one `digest send` did.
public struct SendSummary: Sendable, Hashable, Codable {
    /// Accepted by the provider (FCM, APNs) and marked `sent`.
    public var sent = 0
    /// Accepted by FCM's dry run (`--validate-only`); nothing was delivered or changed.
    public var validated = 0
    /// Failed for now and scheduled again, by error code.
    public var retried: [String: Int] = [:]
    /// Marked `dead`, by error code.
    public var dead: [String: Int] = [:]
    /// Tokens the provider called dead (FCM's `UNREGISTERED`, APNs' `BadDeviceToken` and 410),
    /// remembered as dead (later runs leave them out).
    public var devicesRemoved = 0
    /// Leases given back untried at shutdown.
    public var released = 0
    /// Given back untried for a later look, by reason (Web Push: `HOST_NOT_ALLOWED`, `VAPID_REFUSED`).
    public var postponed: [String: Int] = [:]
    /// Draining: messages left `ready` and not due yet (waiting for their delivery time, or held
    /// through their reader's quiet hours), and when the first of them is due.
    public var waiting = 0
    public var nextDue: Int64?
    /// Wall time, seconds.
    public var seconds = 0.0

    public init() {}

    public var retriedTotal: Int { retried.values.reduce(0, +) }
    public var deadTotal: Int { dead.values.reduce(0, +) }

    /// Human lines for the end of a run.
    public func lines() -> [String] {
        func list(_ values: [String: Int]) -> String {
            values.isEmpty ? "" : " (" + values.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
        }
        let rate = seconds > 0 ? Double(sent + validated) / seconds : 0
        var lines = ["sent: \(sent)"]
        if validated > 0 { lines.append("validated (dry run): \(validated)") }
        lines.append("retried: \(retriedTotal)\(list(retried))")
        lines.append("dead: \(deadTotal)\(list(dead))")
        if devicesRemoved > 0 { lines.append("tokens marked dead (unregistered): \(devicesRemoved)") }
        if released > 0 { lines.append("released at shutdown: \(released)") }
        if !postponed.isEmpty { lines.append("left untried for later: \(postponed.values.reduce(0, +))\(list(postponed))") }
        if waiting > 0 {
            let at = nextDue.map { " (the first at \(Timestamp.format($0)))" } ?? ""
            lines.append("not due yet: \(waiting)\(at), waiting for their delivery time or held through quiet hours")
        }
        lines.append("time: \(String(format: "%.1f", seconds)) s, \(String(format: "%.0f", rate)) messages/s")
        return lines
    }
}
