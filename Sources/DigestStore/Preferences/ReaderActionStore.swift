package import DigestCore
import Foundation

/// What pressing a button on a message (``ReaderAction``) did to its reader's preferences.
package enum ActionOutcome: Sendable, Hashable {
    /// The preferences changed: stored with the version raised and the change recorded (source
    /// ``PreferenceSource/action``, the message's id).
    case applied(StoredPreferences)
    /// Nothing to change: the preferences already say so, or a `fewer` press on a message without a
    /// `fewer_topic`.
    case unchanged(StoredPreferences)
    /// The first press wins: the same action from a message of the same reader and week (this one, or
    /// another device's) already changed the preferences; nothing changed.
    case alreadyPressed
    /// No outbox message has this id (a test send's, or one retention deleted): nothing changed.
    case unknownMessage
    /// The message's reader is no longer in the store.
    case noReader
    /// The preferences come from the publisher's own view (PostgreSQL, docs/005): digest cannot
    /// change them.
    case managedElsewhere
}

/// One press of a message's button, as the collector hands it to the store.
package struct ButtonPress: Sendable, Hashable {
    package var action: ReaderAction
    package var messageID: String
    /// The press's instant (the event's `at`, Unix seconds): what the effect counts from.
    package var at: Int64

    package init(_ action: ReaderAction, messageID: String, at: Int64) {
        self.action = action
        self.messageID = messageID
        self.at = at
    }
}

/// Applies the presses of a message's buttons (`digest collect`, docs/009) to its reader's
/// preferences: both stores implement it beside ``PreferenceStore``.
package protocol ReaderActionStore: Sendable {
    /// In one transaction, in order (a later press of the same reader sees what an earlier one
    /// changed), for each press: finds the outbox message (its reader, week and the report's
    /// `fewer_topic`); unless a change with source ``PreferenceSource/action`` of the same action from
    /// a message of the same reader and week is already recorded (the first press wins), applies it
    /// as ``ReaderActionEffect/apply(_:to:fewerTopic:at:timeZone:)`` says and, when that changes
    /// something, raises the version and records the change at `recordedAt` with the message's id.
    /// One outcome a press, in the order given. A request's presses come as one batch, so that they
    /// cost one transaction, not one each.
    func applyActions(_ presses: [ButtonPress], recordedAt: Int64) async throws -> [ActionOutcome]
}

extension ReaderActionStore {
    /// One press: ``applyActions(_:recordedAt:)`` of a batch of one.
    package func applyAction(_ action: ReaderAction, messageID: String, at: Int64, recordedAt: Int64) async throws -> ActionOutcome {
        try await applyActions([ButtonPress(action, messageID: messageID, at: at)], recordedAt: recordedAt)[0]
    }
}

/// What a press does to preferences, the same on every store.
package enum ReaderActionEffect {
    /// Seconds a `fewer` press holds: ``ReaderAction/fewerWeeks`` weeks.
    package static let fewerSeconds = Int64(ReaderAction.fewerWeeks) * 7 * 86_400

    /// `preferences` after a press at `at` (Unix seconds) by a reader of `timeZone`:
    /// - `fewer`: `fewerTopic` held until `at` + 8 weeks (an entry of that topic replaced, ended
    ///   entries dropped); nothing without a `fewerTopic`;
    /// - `pause`: ``ReaderPreferences/pausedUntil`` the reader's local date of `at` plus
    ///   ``ReaderAction/pauseDays`` days (never earlier than a pause already stored);
    /// - `off`: ``ReaderPreferences/off``.
    package static func apply(
        _ action: ReaderAction, to preferences: ReaderPreferences, fewerTopic: String?, at: Int64, timeZone: String
    ) -> ReaderPreferences {
        var after = preferences
        switch action {
        case .fewer:
            guard let fewerTopic, ReaderPreferences.isValidTopic(fewerTopic) else { return preferences }
            after.fewer = preferences.fewer.filter { $0.topic != fewerTopic && $0.until > at }
            after.fewer.append(FewerTopic(topic: fewerTopic, until: at + fewerSeconds))
        case .pause:
            let until = localDate(of: at, zone: timeZone).adding(days: ReaderAction.pauseDays)
            if let current = preferences.pausedUntil, current >= until { return preferences }
            after.pausedUntil = until
        case .off:
            after.off = true
        }
        return after
    }

    /// The local date in `zone` (an unknown zone: UTC) at `instant`.
    package static func localDate(of instant: Int64, zone: String) -> CivilDate {
        let timeZone = TimeZone(identifier: zone) ?? TimeZone(secondsFromGMT: 0)!
        let local = instant + Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant))))
        return CivilDate(daysSinceEpoch: Int(local >= 0 ? local / 86_400 : (local - 86_399) / 86_400))
    }
}
