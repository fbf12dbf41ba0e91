/// A user's planned notification: the texts, variant and image every one of their devices gets, with
/// the rules that shaped it. ``NotificationEncoder`` turns it into one message per device.
public struct NotificationPlan: Sendable, Hashable {
    public var digestID: String
    public var week: ISOWeek
    public var userID: String
    public var variant: Variant
    public var title: String
    public var body: String
    public var image: ImageRenditions?
    /// Article ids of the picks, best first.
    public var picks: [String]
    /// Every text or budget rule that fired, in order, e.g. `title.truncated:50`.
    public var rules: [String]
    /// UTF-8 bytes per platform budget, for the platforms the user has.
    public var bytes: [Platform: Int]
    /// The A/B arm (`image` or `text`) when a split policy chose the variant.
    public var arm: String?
    /// Action buttons, in order: (id, localized title).
    public var actions: [NotificationAction]
    /// When the message becomes due (Unix seconds).
    public var deliverAt: Int64
    /// The top pick's own page (the first pick's `Article.url`), as the catalogue has it: an Image
    /// message ("Top pick: …") opens it when it is an https URL (``NotificationEncoder/link(_:)``).
    public var topPickURL: String?
    /// `--deliver-at habit`: why the message is due when it is (``DeliveryChoice/reason``), kept in the
    /// report as `due_reason` so that previews of the outbox's rows can say it.
    package var dueReason: String?
    /// The top pick's first topic when the message has the `fewer` button: what a press holds back
    /// (`fewer_topic` in every message's data and in the report).
    package var fewerTopic: String?

    public init(
        digestID: String, week: ISOWeek, userID: String, variant: Variant, title: String, body: String,
        image: ImageRenditions?, picks: [String], rules: [String], bytes: [Platform: Int], arm: String?,
        actions: [NotificationAction], deliverAt: Int64, topPickURL: String? = nil
    ) {
        self.digestID = digestID
        self.week = week
        self.userID = userID
        self.variant = variant
        self.title = title
        self.body = body
        self.image = image
        self.picks = picks
        self.rules = rules
        self.bytes = bytes
        self.arm = arm
        self.actions = actions
        self.deliverAt = deliverAt
        self.topPickURL = topPickURL
    }

    /// The report stored beside each message: picks, bytes per budget, rules, variant.
    public func reportJSON() -> String {
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        writer.field("variant", variant.rawValue)
        if let arm { writer.field("arm", arm) }
        writer.key("picks")
        writer.beginArray()
        for pick in picks { writer.value(pick) }
        writer.endArray()
        writer.key("bytes")
        writer.beginObject()
        for platform in Platform.allCases {
            if let count = bytes[platform] { writer.field(platform.rawValue, count) }
        }
        writer.endObject()
        writer.key("rules")
        writer.beginArray()
        for rule in rules { writer.value(rule) }
        writer.endArray()
        if let dueReason { writer.field("due_reason", dueReason) }
        if let fewerTopic { writer.field("fewer_topic", fewerTopic) }
        writer.endObject()
        return writer.string
    }
}

/// A button on the notification.
public struct NotificationAction: Sendable, Hashable {
    public var id: String
    public var title: String

    public init(id: String, title: String) {
        self.id = id
        self.title = title
    }
}

/// A button a run may put on its messages (`--actions`): its id is what the app reports on a press
/// and the key of its title in `Templates/<locale>/strings.json`'s `actions`.
package enum NotificationActionID: String, Sendable, Hashable, CaseIterable {
    /// "Read": opens the digest (as the notification's own tap).
    case open
    /// "Later": the app reminds the reader.
    case later
    /// "Fewer like this" (``ReaderAction/fewer``).
    case fewer
    /// "Pause for 4 weeks" (``ReaderAction/pause``).
    case pause
    /// "Stop the weekly digest" (``ReaderAction/off``).
    case off

    /// Whether a press changes the reader's preferences, so its message needs a `reply_key`.
    package var needsReplyKey: Bool { ReaderAction(rawValue: rawValue) != nil }

    /// The buttons when `--actions` is not given: `open,later`, or `open,fewer,pause` with reply keys.
    package static func defaults(replyKeys: Bool) -> [NotificationActionID] {
        replyKeys ? [.open, .fewer, .pause] : [.open, .later]
    }

    /// `--actions LIST`: comma-separated ids, each once, at least one.
    package static func parse(_ list: String) throws(NotificationActionListError) -> [NotificationActionID] {
        var ids: [NotificationActionID] = []
        for part in list.split(separator: ",", omittingEmptySubsequences: false) {
            let name = String(part)
            guard let id = NotificationActionID(rawValue: name) else {
                let known = allCases.map(\.rawValue).joined(separator: ", ")
                throw NotificationActionListError("unknown action '\(name)' (one of \(known))")
            }
            guard !ids.contains(id) else { throw NotificationActionListError("'\(name)' is given twice") }
            ids.append(id)
        }
        return ids
    }
}

/// An `--actions` list that cannot be used.
package struct NotificationActionListError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
