public import DigestCore
public import Foundation

/// The JSON written beside a set of previews: where the message came from, the rules that fired, the
/// bytes per budget, and what each PNG shows (visible lines, notes).
public struct PreviewSidecar: Codable, Sendable {
    /// Bytes one platform's message counts against its budget.
    public struct BudgetUse: Codable, Sendable, Hashable {
        public var platform: String
        public var bytes: Int
        /// The configured budget in force (capped by the ceiling).
        public var budget: Int
        /// The platform's hard limit (4096; web 3993).
        public var ceiling: Int
        public var overBudget: Bool { bytes > budget }

        public init(platform: Platform, bytes: Int, budget: Int) {
            self.platform = platform.rawValue
            self.bytes = bytes
            ceiling = Self.ceiling(for: platform)
            self.budget = min(budget, ceiling)
        }

        /// FCM and APNs take 4096 bytes; web push 3993 of plaintext (aes128gcm).
        public static func ceiling(for platform: Platform) -> Int { platform == .web ? 3993 : 4096 }

        enum CodingKeys: String, CodingKey { case platform, bytes, budget, ceiling }
    }

    /// One PNG.
    public struct Entry: Codable, Sendable {
        public var file: String
        public var platform: String
        public var state: String
        public var surface: String
        public var pixelWidth: Int
        public var pixelHeight: Int
        public var texts: [TextLines]
        public var notes: [String]
        /// Where the surface's line limits come from.
        public var limits: String

        public init(_ preview: RenderedPreview, file: String) {
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

    /// `outbox` (the enqueued message), `computed` (what a run would enqueue now) or `file`.
    public var source: String
    public var userID: String?
    public var week: String?
    public var variant: String?
    public var rules: [String]
    public var budgets: [BudgetUse]
    public var previews: [Entry]

    public init(
        source: String, userID: String? = nil, week: String? = nil, variant: String? = nil, rules: [String] = [],
        budgets: [BudgetUse] = [], previews: [Entry] = []
    ) {
        self.source = source
        self.userID = userID
        self.week = week
        self.variant = variant
        self.rules = rules
        self.budgets = budgets
        self.previews = previews
    }

    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}

/// Reads budget figures from messages and reports.
public enum MessageBudget {
    /// The bytes each platform section of an FCM v1 body counts against its budget, as the planner
    /// counts them: the top-level `data` plus the platform's section (for iOS, the APNs payload).
    /// Counted on a compact re-serialization, which for the run's own messages has the same length.
    public static func bytes(ofMessage json: [UInt8]) -> [Platform: Int] {
        guard let root = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else { return [:] }
        let message = root["message"] as? [String: Any] ?? root
        func size(_ value: Any?) -> Int {
            guard let value, JSONSerialization.isValidJSONObject(value),
                let data = try? JSONSerialization.data(withJSONObject: value, options: [.withoutEscapingSlashes])
            else { return 0 }
            return data.count
        }
        let data = size(message["data"])
        var result: [Platform: Int] = [:]
        if let android = message["android"] { result[.android] = data + size(android) }
        if let apns = message["apns"] as? [String: Any] { result[.ios] = data + size(apns["payload"]) }
        if let web = message["webpush"] { result[.web] = data + size(web) }
        return result
    }
}
