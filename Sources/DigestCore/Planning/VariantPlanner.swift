import Synchronization

/// Chooses a user's variant and fits their texts to every length and byte budget
/// (docs/007-rules-and-limits.md, "Text rules" and "Variants"), recording each rule that fired.
public struct VariantPlanner: Sendable {
    /// Limits and policy. Lengths are grapheme clusters; budgets are UTF-8 bytes.
    public struct Configuration: Sendable, Hashable {
        public var titleLimit = 50
        public var defaultBodyLimit = 120
        public var imageBodyLimit = 80
        /// Each bullet's article title.
        public var bulletTitleLimit = 60
        /// Also the limit of the BigText header line.
        public var headerLimit = 120
        public var maxBullets = 5
        /// Android cuts notification text at 1024 UTF-16 units (Android 11+); the body stays under it.
        public var androidUTF16Limit = 1024
        /// Per platform budget; each platform's hard ceiling still applies.
        public var byteBudget = 3800
        public var policy: VariantPolicy = .preferImage
        /// `--actions`: the buttons, in order (ids of ``NotificationActionID``); `fewer` only on a
        /// digest whose top pick has a topic.
        package var actions: [NotificationActionID] = NotificationActionID.defaults(replyKeys: false)

        public init() {}

        /// The budget in force for a platform: the configured one, capped by the platform's ceiling.
        package func budget(for platform: Platform) -> Int {
            min(byteBudget, Self.ceiling(for: platform))
        }

        /// FCM and APNs take 4096 bytes; web push 3993 bytes of plaintext (RFC 8291 with aes128gcm).
        package static func ceiling(for platform: Platform) -> Int {
            platform == .web ? 3993 : 4096
        }
    }

    public let configuration: Configuration
    public let encoder: NotificationEncoder
    /// The same article shows as the same bullet for every user of a locale: render it once.
    private let bulletCache = BulletCache()

    public init(configuration: Configuration = .init(), encoder: NotificationEncoder = .init()) {
        self.configuration = configuration
        self.encoder = encoder
    }

    /// One pick's bullet line (cleaned), and whether its title was cut.
    private func bulletLine(_ article: Article, templates: LocalizedTemplates, titleLimit: Int) -> (line: String, cut: Bool) {
        let key = BulletCache.Key(locale: templates.requested, id: article.id, limit: titleLimit)
        let topic = article.topics.first ?? ""
        if let hit = bulletCache.line(for: key, title: article.title, minutes: article.readingMinutes, topic: topic) {
            return hit
        }
        let title = TextRules.truncate(TextRules.clean(article.title), to: titleLimit)
        let model = BulletViewModel(
            title: title.text, minutesCount: article.readingMinutes, topic: topic, templates: templates)
        let line = TextRules.clean(templates.render(.bullet, model))
        bulletCache.store(
            .init(title: article.title, minutes: article.readingMinutes, topic: topic, line: line, cut: title.cut), for: key)
        return (line, title.cut)
    }

    /// Plans the notification for `digest`. `image` is what the attachment provider gave for the top
    /// pick's image (`nil` when it has none). Fails only when even the shortest Default variant is
    /// over a budget.
    public func plan(
        _ digest: WeeklyDigest, templates: LocalizedTemplates, image: ImageOutcome?, platforms: Set<Platform>
    ) throws(PlanningError) -> NotificationPlan {
        try planAndEncode(digest, templates: templates, image: image, platforms: platforms).plan
    }

    /// ``plan(_:templates:image:platforms:)`` with the message parts its last budget check encoded,
    /// for ``NotificationEncoder/messages(for:devices:)-(EncodedPlan,_)``. `deliverAt` replaces the digest's
    /// delivery time (the run's `--send-at now`).
    public func planAndEncode(
        _ digest: WeeklyDigest, templates: LocalizedTemplates, image: ImageOutcome?, platforms: Set<Platform>,
        deliverAt: Int64? = nil
    ) throws(PlanningError) -> EncodedPlan {
        var rules = RuleLog()
        let model = viewModel(digest, templates)
        let renditions: ImageRenditions?
        switch image {
        case .ready(let value)?: renditions = value
        case .unavailable(let reason)?:
            renditions = nil
            rules.set(.imageUnavailable, reason)
        case nil: renditions = nil
        }
        let canBigText = !digest.isReengagement && digest.picks.count >= 2
        var arm: String?
        let wantsImage: Bool
        switch configuration.policy {
        case .preferImage: wantsImage = true
        case .preferText: wantsImage = !canBigText
        case .split(let percent):
            let inImageArm = Self.bucket(digest.digestID) < percent
            arm = inImageArm ? "image" : "text"
            wantsImage = inImageArm || !canBigText
        }
        var variant: Variant
        if renditions != nil && wantsImage {
            variant = .image
        } else if canBigText {
            variant = .bigText
        } else {
            variant = .defaultText
        }

        var limits = (
            title: configuration.titleLimit, bullets: min(configuration.maxBullets, digest.picks.count),
            bulletTitle: configuration.bulletTitleLimit, body: 0
        )
        limits.body = bodyLimit(variant)
        // "Fewer like this" is about the top pick's first topic: no button without one.
        let fewerTopic = configuration.actions.contains(.fewer) ? digest.picks.first?.topics.first : nil
        let actions = configuration.actions.compactMap { id -> NotificationAction? in
            id == .fewer && fewerTopic == nil ? nil : NotificationAction(id: id.rawValue, title: templates.action(id.rawValue))
        }
        let titlePiece: TemplateCatalog.Piece = digest.isReengagement ? .reengageTitle : .title
        let titleSource = TextRules.clean(templates.render(titlePiece, model))
        rules.noteUntranslatedTopic(digest.stats.topTopic, readAs: "topTopic", by: titlePiece, templates)
        while true {
            var attempt = rules
            let title = TextRules.truncate(titleSource, to: limits.title)
            if title.cut { attempt.set(.titleTruncated, String(limits.title)) }
            let body = composeBody(
                variant, digest, model, templates, bullets: limits.bullets, bulletTitle: limits.bulletTitle,
                bodyLimit: limits.body, rules: &attempt)
            var plan = NotificationPlan(
                digestID: digest.digestID, week: digest.window.week, userID: digest.reader.id, variant: variant,
                title: title.text, body: body, image: variant == .image ? renditions : nil,
                picks: digest.picks.map(\.id), rules: [], bytes: [:], arm: arm, actions: actions,
                deliverAt: deliverAt ?? digest.window.deliverAt, topPickURL: digest.picks.first?.url)
            plan.fewerTopic = fewerTopic
            var encoded = encoder.encode(plan, platforms: platforms)
            plan.bytes = encoded.bytes
            if !plan.bytes.contains(where: { $0.value > configuration.budget(for: $0.key) }) {
                plan.rules = attempt.entries
                encoded.plan = plan
                return encoded
            }
            // Over budget: degrade one step, in the order of docs/007-rules-and-limits.md, and try again.
            if variant == .bigText && limits.bullets > 1 {
                limits.bullets -= 1
                rules.set(.budgetBullets, String(limits.bullets))
            } else if variant == .bigText && limits.bulletTitle > 20 {
                limits.bulletTitle = max(20, limits.bulletTitle - 10)
                rules.set(.budgetBulletTitle, String(limits.bulletTitle))
            } else if limits.body > 20 {
                limits.body = max(20, limits.body - 20)
                rules.set(.budgetBody, String(limits.body))
            } else if variant != .defaultText {
                variant = .defaultText
                limits.body = bodyLimit(variant)
                rules.set(.budgetFallback, Variant.defaultText.rawValue)
            } else if limits.title > 10 {
                limits.title -= 10
                rules.set(.budgetTitle, String(limits.title))
            } else {
                let sizes = plan.bytes.map { "\($0.key.rawValue) \($0.value)" }.sorted().joined(separator: ", ")
                throw PlanningError(userID: digest.reader.id, message: "over the byte budget at the shortest text (\(sizes))")
            }
        }
    }

    private func bodyLimit(_ variant: Variant) -> Int {
        switch variant {
        case .bigText: configuration.headerLimit
        case .image: configuration.imageBodyLimit
        case .defaultText: configuration.defaultBodyLimit
        }
    }

    private func composeBody(
        _ variant: Variant, _ digest: WeeklyDigest, _ model: DigestViewModel, _ templates: LocalizedTemplates,
        bullets: Int, bulletTitle: Int, bodyLimit: Int, rules: inout RuleLog
    ) -> String {
        switch variant {
        case .image, .defaultText:
            let piece: TemplateCatalog.Piece =
                digest.isReengagement ? .reengageBody : (variant == .image ? .imageBody : .defaultBody)
            // The image body is one line (Android cannot mix big picture and big text).
            let text = TextRules.clean(templates.render(piece, model), keepNewlines: variant == .defaultText)
            rules.noteUntranslatedTopic(digest.stats.topTopic, readAs: "topTopic", by: piece, templates)
            let cut = TextRules.truncate(text, to: bodyLimit)
            if cut.cut { rules.set(.bodyTruncated, String(bodyLimit)) }
            return capUTF16(cut.text, rules: &rules)
        case .bigText:
            let header = TextRules.truncate(TextRules.clean(templates.render(.header, model)), to: bodyLimit)
            if header.cut { rules.set(.headerTruncated, String(bodyLimit)) }
            rules.noteUntranslatedTopic(digest.stats.topTopic, readAs: "topTopic", by: .header, templates)
            if digest.picks.count > configuration.maxBullets { rules.set(.bigTextMaxBullets, String(configuration.maxBullets)) }
            var lines: [String] = []
            var cutTitles = 0
            for article in digest.picks.prefix(bullets) {
                let bullet = bulletLine(article, templates: templates, titleLimit: bulletTitle)
                if bullet.cut { cutTitles += 1 }
                rules.noteUntranslatedTopic(article.topics.first, readAs: "topic", by: .bullet, templates)
                lines.append(bullet.line)
            }
            if cutTitles > 0 { rules.set(.bulletTruncated, "\(cutTitles)x\(bulletTitle)") }
            var shown = lines.count
            // The non-empty parts one per line, written into one string sized for them.
            func assemble() -> String {
                let hidden = digest.picks.count - shown
                let more = hidden > 0 ? TextRules.clean(templates.render(.more, MoreViewModel(count: hidden, templates: templates))) : ""
                var body = ""
                body.reserveCapacity(
                    header.text.utf8.count + more.utf8.count + lines.prefix(shown).reduce(shown + 1) { $0 + $1.utf8.count })
                body.append(header.text)
                for line in lines.prefix(shown) where !line.isEmpty {
                    if !body.isEmpty { body.append("\n") }
                    body.append(line)
                }
                if !more.isEmpty {
                    if !body.isEmpty { body.append("\n") }
                    body.append(more)
                }
                return body
            }
            var body = assemble()
            // Android's framework cap: stay under it by dropping bullets, then by cutting.
            while TextRules.utf16Count(of: body, reaches: configuration.androidUTF16Limit) && shown > 1 {
                shown -= 1
                body = assemble()
                rules.set(.androidUTF16Bullets, String(shown))
            }
            return capUTF16(body, rules: &rules)
        }
    }

    /// Any body stays under Android's UTF-16 cap (combining-mark pile-ups can pass every other limit).
    private func capUTF16(_ body: String, rules: inout RuleLog) -> String {
        guard TextRules.utf16Count(of: body, reaches: configuration.androidUTF16Limit) else { return body }
        rules.set(.androidUTF16Truncated, String(configuration.androidUTF16Limit - 1))
        return TextRules.truncate(body, toUTF16: configuration.androidUTF16Limit - 1).text
    }

    func viewModel(_ digest: WeeklyDigest, _ templates: LocalizedTemplates) -> DigestViewModel {
        DigestViewModel(digest, templates: templates)
    }

    /// 0…99 from a stable hash (FNV-1a) of the digest id (`<week>:<user>`).
    static func bucket(_ key: String) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return Int(hash % 100)
    }
}

/// Rendered bullets by locale, article and title limit, bounded in size. An entry keeps the article
/// fields it was rendered from, and counts only while they still match.
final class BulletCache: Sendable {
    struct Key: Hashable, Sendable {
        var locale: String
        var id: String
        var limit: Int
    }

    /// Immutable and shared: a hit takes one reference, not a copy of its strings.
    final class Entry: Sendable {
        let title: String
        let minutes: Int
        let topic: String
        let line: String
        let cut: Bool

        init(title: String, minutes: Int, topic: String, line: String, cut: Bool) {
            self.title = title
            self.minutes = minutes
            self.topic = topic
            self.line = line
            self.cut = cut
        }
    }

    private let entries = Mutex<[Key: Entry]>([:])
    private let limit = 50_000

    /// The line and whether its title was cut, when the entry for `key` was rendered from these
    /// fields (compared outside the lock).
    func line(for key: Key, title: String, minutes: Int, topic: String) -> (line: String, cut: Bool)? {
        guard let entry = entries.withLock({ $0[key] }), entry.minutes == minutes, entry.title == title, entry.topic == topic
        else { return nil }
        return (entry.line, entry.cut)
    }

    func store(_ entry: Entry, for key: Key) {
        entries.withLock { entries in
            if entries.count >= limit { entries.removeAll(keepingCapacity: true) }
            entries[key] = entry
        }
    }
}

/// Why a user's notification could not be planned.
public struct PlanningError: Error, CustomStringConvertible {
    public let userID: String
    public let message: String

    public var description: String { "user \(userID): \(message)" }
}

/// Rules in the order they first fired; setting a rule again updates its value.
struct RuleLog: Sendable {
    private(set) var keys: [PlanRule] = []
    private var values: [PlanRule: String] = [:]

    mutating func set(_ rule: PlanRule, _ value: String) {
        if values.updateValue(value, forKey: rule) == nil { keys.append(rule) }
    }

    var entries: [String] { keys.map { "\($0.rawValue):\(values[$0] ?? "")" } }
}
