/// A text or budget rule the planner applies, by its stable name: the name that plans, outbox
/// reports and run summaries count it under.
package enum PlanRule: String, Sendable, CaseIterable, Codable {
    /// Fewer candidates than picks: the reader's languages, reads and last weeks' picks left only
    /// this many (detail: how many).
    case picksShort = "picks.short"
    /// The top pick's image could not be used (detail: the reason); the plan has no picture.
    case imageUnavailable = "image.unavailable"
    /// The byte budget took bullets away (detail: how many are left).
    case budgetBullets = "budget.bullets"
    /// The byte budget shortened bullet titles (detail: the limit).
    case budgetBulletTitle = "budget.bullet_title"
    /// The byte budget shortened the body (detail: the limit).
    case budgetBody = "budget.body"
    /// Nothing fitted: the plan fell back to the default variant.
    case budgetFallback = "budget.fallback"
    /// The byte budget shortened the title (detail: the limit).
    case budgetTitle = "budget.title"
    /// The title was cut at a word boundary (detail: the limit).
    case titleTruncated = "title.truncated"
    /// The body was cut at a word boundary (detail: the limit).
    case bodyTruncated = "body.truncated"
    /// The header line was cut (detail: the limit).
    case headerTruncated = "header.truncated"
    /// More picks than a BigText shows (detail: the most it shows).
    case bigTextMaxBullets = "bigtext.max_bullets"
    /// Bullet titles were cut (detail: `<count>x<limit>`).
    case bulletTruncated = "bullet.truncated"
    /// Android's UTF-16 limit took bullets away (detail: how many are shown).
    case androidUTF16Bullets = "android.utf16.bullets"
    /// Android's UTF-16 limit cut the body (detail: the limit).
    case androidUTF16Truncated = "android.utf16.truncated"
    /// The text shows a topic by its slug: no `topics.json` on the locale's chain names it (detail:
    /// the slug).
    case topicsUntranslated = "topics.untranslated"
}

extension RuleLog {
    /// Records ``PlanRule/topicsUntranslated`` when `piece` reads the topic (as `name`) and no locale
    /// on the chain names `slug`.
    mutating func noteUntranslatedTopic(
        _ slug: String?, readAs name: String, by piece: TemplateCatalog.Piece, _ templates: LocalizedTemplates
    ) {
        guard let slug, !slug.isEmpty, templates.topicName(slug) == nil, templates.reads(name, in: piece) else { return }
        set(.topicsUntranslated, slug)
    }
}
