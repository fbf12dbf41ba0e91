/// A button on a digest that changes the reader's preferences, as the app reports its press
/// (docs/009): the action's id is its raw value.
public enum ReaderAction: String, Sendable, Hashable, CaseIterable, Codable {
    /// "Fewer like this": the message's `fewer_topic` at most once a digest, never first, for
    /// ``fewerWeeks`` weeks after the press.
    case fewer
    /// "Pause for 4 weeks": ``ReaderPreferences/pausedUntil`` the reader's local date ``pauseDays``
    /// days after the press.
    case pause
    /// "Stop the weekly digest": ``ReaderPreferences/off``.
    case off

    /// How long a "fewer" press holds.
    package static let fewerWeeks = 8
    /// How long a "pause" press pauses.
    package static let pauseDays = 28
}

/// A topic the reader asked to see fewer of, until an instant: at most one pick of it a digest,
/// never the first, never the Image variant's picture, for digests due before ``until``.
public struct FewerTopic: Sendable, Hashable {
    public var topic: String
    /// Unix seconds: digests due at or after it are no longer held back.
    public var until: Int64

    public init(topic: String, until: Int64) {
        self.topic = topic
        self.until = until
    }
}
