package import DigestCore
package import Foundation

/// The JSON written beside a set of previews: where the message came from, the rules that fired, the
/// bytes per budget, and what each PNG shows (visible lines, notes).
package struct PreviewSidecar: Codable, Sendable {
    /// Bytes one platform's message counts against its budget.
    package struct BudgetUse: Codable, Sendable, Hashable {
        package var platform: String
        package var bytes: Int
        /// The configured budget in force (capped by the ceiling).
        package var budget: Int
        /// The platform's hard limit (4096; web 3993).
        package var ceiling: Int
        package var overBudget: Bool { bytes > budget }

        package init(platform: Platform, bytes: Int, budget: Int) {
            self.platform = platform.rawValue
            self.bytes = bytes
            ceiling = Self.ceiling(for: platform)
            self.budget = min(budget, ceiling)
        }

        /// FCM and APNs take 4096 bytes; web push 3993 of plaintext (aes128gcm).
        package static func ceiling(for platform: Platform) -> Int { platform == .web ? 3993 : 4096 }

        enum CodingKeys: String, CodingKey { case platform, bytes, budget, ceiling }
    }

    /// One PNG.
    package struct Entry: Codable, Sendable {
        package var file: String
        package var platform: String
        package var state: String
        package var surface: String
        package var pixelWidth: Int
        package var pixelHeight: Int
        package var texts: [TextLines]
        package var notes: [String]
        /// Where the surface's line limits come from.
        package var limits: String

        package init(_ preview: RenderedPreview, file: String) {
            self.file = file
            platform = preview.platform.rawValue
            state = preview.state.rawValue
            surface = preview.surfaceName
            pixelWidth = preview.pixelWidth
            pixelHeight = preview.pixelHeight
            texts = preview.texts
            notes = preview.notes
            limits = preview.limits.source
        }
    }

    /// When a user's message is (or would be) due, and why.
    package struct Due: Codable, Sendable, Hashable {
        /// The instant, UTC, RFC 3339 (`available_at`).
        package var at: String
        /// The local time of day chosen, `HH:MM` (`due_local`; `nil` on rows from before it was kept).
        package var local: String?
        /// `habit`, `fallback` or `control` under `--deliver-at habit`, else `nil`.
        package var timing: String?
        /// Why: `habit: 19:00 local from 14 reads on 6 days`, `fallback: 3 reads`, `control group`.
        package var reason: String?

        package init(at: String, local: String?, timing: String?, reason: String?) {
            self.at = at
            self.local = local
            self.timing = timing
            self.reason = reason
        }

        /// `due 2026-11-23T18:00:00Z (19:00 local) — habit: 19:00 local from 14 reads on 6 days`.
        package var line: String {
            "due \(at)" + (local.map { " (\($0) local)" } ?? "") + (reason.map { " — \($0)" } ?? "")
        }
    }

    /// What the reader chose (README, "What the reader chooses"), every key with its default filled in.
    package struct Preferences: Codable, Sendable, Hashable {
        package var every: Int
        /// The ISO week the pace counts from (`2026-W45`), if any.
        package var from: String?
        /// No digest due on this local date or before it (`2026-12-14`), if any.
        package var pausedUntil: String?
        package var follow: [String]
        package var mute: [String]
        package var off: Bool

        enum CodingKeys: String, CodingKey { case every, from, pausedUntil, follow, mute, off }

        /// Every key, `null` for a `from` or `pausedUntil` the reader has none of (as the API answers).
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(every, forKey: .every)
            try container.encode(from, forKey: .from)
            try container.encode(pausedUntil, forKey: .pausedUntil)
            try container.encode(follow, forKey: .follow)
            try container.encode(mute, forKey: .mute)
            try container.encode(off, forKey: .off)
        }

        package init(_ preferences: ReaderPreferences) {
            every = preferences.every
            from = preferences.from?.description
            pausedUntil = preferences.pausedUntil?.description
            follow = preferences.follow
            mute = preferences.mute
            off = preferences.off
        }

        /// `every 2 weeks from 2026-W45 · paused until 2026-12-14 · follow: science · mute: sports`,
        /// or `defaults` when nothing differs from them.
        package var line: String {
            var parts: [String] = []
            if every > 1 { parts.append("every \(every) weeks" + (from.map { " from \($0)" } ?? "")) }
            if let pausedUntil { parts.append("paused until \(pausedUntil)") }
            if !follow.isEmpty { parts.append("follow: \(follow.joined(separator: ", "))") }
            if !mute.isEmpty { parts.append("mute: \(mute.joined(separator: ", "))") }
            if off { parts.append("off") }
            return parts.isEmpty ? "defaults" : parts.joined(separator: " · ")
        }
    }

    /// A candidate the reader's preferences kept out of the picks (`muted: sports`, `followed first:
    /// science`).
    package typealias LeftOut = LeftOutCandidate

    /// `outbox` (the enqueued message), `computed` (what a run would enqueue now) or `file`.
    package var source: String
    package var userID: String?
    package var week: String?
    package var variant: String?
    package var rules: [String]
    package var budgets: [BudgetUse]
    package var previews: [Entry]
    /// When the user's message is due and why (`nil` for a message from a file).
    package var due: Due?
    /// The reader's preferences (`nil` for a message from a file).
    package var preferences: Preferences?
    /// The best candidates the reader's preferences left out of the picks, and why (`nil` or empty
    /// when they left none out, or for a message from the outbox or a file).
    package var leftOut: [LeftOut]?

    package init(
        source: String, userID: String? = nil, week: String? = nil, variant: String? = nil, rules: [String] = [],
        budgets: [BudgetUse] = [], previews: [Entry] = [], due: Due? = nil, preferences: Preferences? = nil,
        leftOut: [LeftOut] = []
    ) {
        self.due = due
        self.preferences = preferences
        self.leftOut = leftOut.isEmpty ? nil : leftOut
        self.source = source
        self.userID = userID
        self.week = week
        self.variant = variant
        self.rules = rules
        self.budgets = budgets
        self.previews = previews
    }

    package func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}

/// Reads budget figures from messages and reports.
package enum MessageBudget {
    /// The bytes each platform section of a message counts against its budget, as the planner
    /// counts them: Android its section; iOS the APNs payload as APNs gets it (of an FCM body, the
    /// `apns.payload` with the top-level `data`'s keys beside `aps`; of a direct APNs message, its
    /// payload); web the top-level `data` plus the `webpush` section, and of a Web Push plaintext the
    /// plaintext itself (what one aes128gcm record holds). Counted on a compact re-serialization,
    /// which for the run's own messages has the same length.
    package static func bytes(ofMessage json: [UInt8]) -> [Platform: Int] {
        guard let root = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else { return [:] }
        func size(_ value: Any?) -> Int {
            guard let value, JSONSerialization.isValidJSONObject(value),
                let data = try? JSONSerialization.data(withJSONObject: value, options: [.withoutEscapingSlashes])
            else { return 0 }
            return data.count
        }
        if let direct = PreviewMessage.apnsDirect(root) { return [.ios: size(direct["payload"])] }
        if PreviewMessage.webPushPlaintext(root) != nil { return [.web: size(root)] }
        let message = root["message"] as? [String: Any] ?? root
        let dataBytes = size(message["data"])  // 0 without
        var result: [Platform: Int] = [:]
        if let android = message["android"] { result[.android] = dataBytes + size(android) }
        if let apns = message["apns"] as? [String: Any] {
            // The keys FCM adds beside `aps`, the payload's own winning (key order does not change the size).
            let payload = apns["payload"] as? [String: Any] ?? [:], data = message["data"] as? [String: Any] ?? [:]
            result[.ios] = size(payload.merging(data) { own, _ in own })
        }
        if let web = message["webpush"] { result[.web] = dataBytes + size(web) }
        return result
    }
}
