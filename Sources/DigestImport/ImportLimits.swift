/// The limits `digest import` holds every line to (docs/008-import.md). A line over one is skipped
/// with its reason, never cut down to fit.
package enum ImportLimits {
    /// Bytes of one line, its line break not counted (`line_too_long`). Longer lines are read past
    /// without being held in memory.
    package static let maxLineBytes = 1 << 20
    /// How deep objects and arrays may nest in a line (`too_deep`); a record needs 3.
    package static let maxNesting = 32
    /// UTF-8 bytes of a user or article id, in any file (`bad_id`).
    package static let maxIDBytes = 256
    /// Bytes of a device token (`bad_token`). FCM tokens are a few hundred; PostgreSQL indexes a
    /// reader's tokens with its id, and an index entry must stay well under its 2,704-byte ceiling.
    package static let maxTokenBytes = 1_024
    /// Hex digits of an APNs device token (`bad_token`): 32 bytes today (64 digits), and Apple says they
    /// may grow, so up to 100 bytes.
    package static let apnsTokenHexDigits = 64...200
    /// Bytes of a device's APNs topic, the app's bundle id (`bad_topic`): the length an `apns-topic`
    /// header's bundle id may have.
    package static let maxTopicIDBytes = 255
    /// UTF-8 bytes of a locale or a time zone name (`bad_locale`, `bad_time_zone`).
    package static let maxNameBytes = 64
    /// Topics of one article, after cleaning (`bad_topics`).
    package static let maxTopicsPerArticle = 64
    /// UTF-8 bytes of one topic, after cleaning (`bad_topics`).
    package static let maxTopicBytes = 256
    /// An article's `readingMinutes`: 0 to a day (`bad_number`).
    package static let maxReadingMinutes = 1_440
    /// A read's `seconds`: 0 to a day (`bad_number`).
    package static let maxReadSeconds = 86_400
}
