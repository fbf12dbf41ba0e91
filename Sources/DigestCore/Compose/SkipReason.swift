/// Why a reader gets no message this week, by its stable name: the name run summaries, reports and
/// previews show.
public enum SkipReason: String, Sendable, CaseIterable, Codable {
    /// The reader opted out of the digest.
    case optedOut = "opted_out"
    /// The reader's pace (``ReaderPreferences/every``) has no digest this week.
    case notThisWeek = "not_this_week"
    /// The digest's due time falls on a local date on or before the reader's
    /// ``ReaderPreferences/pausedUntil``.
    case paused
    /// The reader has no device to send to.
    case noDevices = "no_devices"
    /// Every device of the reader has a token FCM called unregistered (not registered again since).
    case deadTokens = "dead_tokens"
    /// The reader read nothing in the week and the weeks before it (`--dormant-after`).
    case dormant
    /// No variant fitted the byte budget.
    case overBudget = "over_budget"
    /// Every device of the reader is a Web Push subscription whose store row has no keys (an adopter's
    /// PostgreSQL view without `keys_p256dh` and `keys_auth`): a message cannot be encrypted to it.
    case subscriptionKeysMissing = "subscription_keys_missing"
}
