public import DigestCore
import Foundation

/// What a run did, printed at the end and written as JSON with `--report`.
public struct RunSummary: Sendable, Codable {
    public var week: String
    public var sendAt: String
    /// Users with keys up to this were done before this run started.
    public var resumedFromCursor: Int64
    /// Where the week stood when this run started (`resumed after user key 12000`), if not at the start.
    public var resumed: String?
    /// The week was already complete: nothing was left to do.
    public var wasComplete: Bool
    public var seconds: Double
    public var usersPerSecond: Double
    /// What this invocation did.
    public var thisRun: RunCounters
    /// The week's totals over every run of it, this one included.
    public var weekTotals: RunCounters
    /// Images fetched, reused and failed by reason (from the attachment provider).
    public var images: [String: Int]
    /// Rolling runs: zones whose week had ended (walked), zones still in the week, and the UTC
    /// offsets of the zones this run took users from.
    public var zones: Int? = nil
    public var zonesLeft: Int? = nil
    public var offsets: [String]? = nil
    /// Rolling runs: the week has no reads yet, so no zone was walked (the next run looks again).
    public var waitingForReads: Bool? = nil

    /// The summary as lines for a person.
    public func lines() -> [String] {
        func list(_ values: [String: Int]) -> String {
            values.isEmpty ? "none" : values.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }
        var lines: [String] = []
        if waitingForReads == true {
            return ["week \(week): no reads in the week yet, nothing done (import them; the next run looks again, or pass --allow-empty-week)"]
        }
        if wasComplete && offsets == nil {
            lines.append("week \(week) was already complete: nothing to do, nothing enqueued")
        } else if let offsets {
            let covered = offsets.isEmpty ? "no new users" : "UTC offsets \(offsets.joined(separator: ", "))"
            let ended = zones ?? 0
            lines.append("week \(week): \(covered) (\(ended) zone\(ended == 1 ? "" : "s") ended, \(zonesLeft ?? 0) still in the week)")
        } else if let resumed {
            lines.append("week \(week): \(resumed)")
        } else {
            lines.append("week \(week)")
        }
        let c = thisRun
        lines.append("users: \(c.users) looked at, \(c.digested) digested (\(c.reengaged) re-engagement), skipped: \(list(c.skipped))")
        if !c.devicesSkipped.isEmpty { lines.append("devices skipped: \(list(c.devicesSkipped))") }
        lines.append("variants: \(list(c.variants))")
        if !c.timings.isEmpty { lines.append("delivery timing (users): \(list(c.timings))") }
        lines.append("messages: \(c.messages) built, \(c.enqueued) enqueued, \(c.messages - c.enqueued) already in the outbox")
        lines.append("fallbacks: \(c.localeFallbacks) locale, \(c.timeZoneFallbacks) time zone (UTC)")
        lines.append("top-pick images: \(list(c.images))")
        if !images.isEmpty { lines.append("image files: \(list(images))") }
        lines.append("rules fired: \(list(c.rules))")
        lines.append(String(format: "time: %.2f s, %.0f users/s, send at: %@", seconds, usersPerSecond, sendAt))
        let t = weekTotals
        lines.append("week totals: \(t.users) users, \(t.messages) messages built, \(t.enqueued) in the outbox")
        return lines
    }
}
