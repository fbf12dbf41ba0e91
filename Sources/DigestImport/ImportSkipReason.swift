/// Why a line of an import file was not imported, by its stable name: the name the import's report,
/// its summary (``ImportFileSummary/skipped``) and its problem lines (`file:line: name: detail`) use.
/// docs/008-import.md lists what each covers.
package enum ImportSkipReason: String, Sendable, CaseIterable, Codable {
    /// The line is longer than ``ImportLimits/maxLineBytes``.
    case lineTooLong = "line_too_long"
    /// The line's bytes are not UTF-8.
    case notUTF8 = "not_utf8"
    /// A `\u` escape is half of a surrogate pair, without its other half.
    case loneSurrogate = "lone_surrogate"
    /// Objects and arrays nest deeper than ``ImportLimits/maxNesting``.
    case tooDeep = "too_deep"
    /// Not one JSON value: a syntax error, a control character inside a string, a key given twice,
    /// something after the value.
    case badJSON = "bad_json"
    /// One JSON value, but not an object.
    case notAnObject = "not_an_object"
    /// A field that must be there is absent or `null`.
    case missingField = "missing_field"
    /// A field holds the wrong kind of JSON value (a string for a number, an object for a list, …).
    case wrongType = "wrong_type"
    /// A number that is not a whole number, is negative, or is past its field's limit.
    case badNumber = "bad_number"
    /// Not an RFC 3339 instant (`2026-11-17T19:22:05Z`), or a date or time that does not exist.
    case badDate = "bad_date"
    /// A user or article id that is empty, longer than ``ImportLimits/maxIDBytes``, holds a control
    /// character or is not in Unicode NFC. Ids are never cleaned into other ids.
    case badID = "bad_id"
    /// A device token that is empty, longer than ``ImportLimits/maxTokenBytes``, or not printable
    /// ASCII without spaces; an `apns` device's token that is not hex of even length, 64 to 200 digits;
    /// a `webpush` device's token that is not its subscription's endpoint.
    /// Tokens are never cleaned into other tokens (but an APNs token's hex is lower-cased).
    case badToken = "bad_token"
    /// A device platform other than `android`, `ios` and `web`, an `apns` device's platform other
    /// than `ios`, or a `webpush` device's other than `web`.
    case badPlatform = "bad_platform"
    /// A device provider other than `fcm`, `apns` and `webpush`.
    case badProvider = "bad_provider"
    /// A device topic that is empty, longer than ``ImportLimits/maxTopicIDBytes`` or holds a character
    /// a bundle id cannot (letters, digits, `.`, `-`).
    case badTopic = "bad_topic"
    /// A `webpush` device's `subscription.endpoint` that is not an `https://` URL with a host (and no
    /// user name or password), is longer than ``ImportLimits/maxTokenBytes`` or holds a character
    /// outside printable ASCII. Which push services may be contacted is the sender's decision, not
    /// the import's.
    case badEndpoint = "bad_endpoint"
    /// A `webpush` device's `subscription.keys` that are not base64url of a P-256 public key (`p256dh`:
    /// a 65-byte uncompressed point on the curve) and a 16-byte `auth` secret
    /// (``WebPushSubscriptionKeys``, the sender's own check).
    case badSubscriptionKeys = "bad_subscription_keys"
    /// A locale with a control character or longer than ``ImportLimits/maxNameBytes``.
    case badLocale = "bad_locale"
    /// A time zone with a control character or longer than ``ImportLimits/maxNameBytes``.
    case badTimeZone = "bad_time_zone"
    /// An article url that is not http(s), or a url or image url with a control character.
    case badURL = "bad_url"
    /// An article language that is not a BCP 47 tag.
    case badLanguage = "bad_language"
    /// More topics than ``ImportLimits/maxTopicsPerArticle`` or one longer than
    /// ``ImportLimits/maxTopicBytes``.
    case badTopics = "bad_topics"
    /// A user's `preferences.every` that is not the number 1, 2 or 4 (a string such as `"2"` too).
    case badEvery = "bad_every"
    /// A user's `preferences.from` that is not an ISO week written `2026-W45` (one that exists).
    case badFrom = "bad_from"
    /// A user's `preferences.pausedUntil` that is not a date written `2026-12-14` (one that exists).
    case badPausedUntil = "bad_paused_until"
    /// An element of a user's `preferences.follow` or `preferences.mute` that is not a topic key: not a
    /// string, empty, longer than ``ReaderPreferences/maxTopicLength`` code points, or holding a
    /// control character.
    case badPreferenceTopic = "bad_preference_topic"
    /// A user's `preferences.follow` or `preferences.mute` with more than
    /// ``ReaderPreferences/maxTopics`` distinct topics.
    case tooManyPreferenceTopics = "too_many_preference_topics"
    /// A user line whose `optedOut` and `preferences.off` are both given and differ.
    case conflictingOff = "conflicting_off"
    /// A user or article whose id a later line of the same file gives again: the last line wins.
    case duplicateID = "duplicate_id"
    /// A read of a user the store does not have.
    case unknownUser = "unknown_user"
    /// A read of an article the store does not have.
    case unknownArticle = "unknown_article"
}

/// Why one line was not imported: its reason and the details a person needs to fix the line.
package struct LineProblem: Error {
    package let code: ImportSkipReason
    package let reason: String

    init(_ code: ImportSkipReason, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}
