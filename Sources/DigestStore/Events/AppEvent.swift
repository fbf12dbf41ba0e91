public import DigestCore

/// What an app reports about one device message (`POST /v1/events`, docs/009-events.md).
public struct AppEvent: Sendable, Hashable {
    /// The message's `message_id`, as its data carried it.
    public var messageID: String
    public var type: AppEventType
    /// The button's id for ``AppEventType/action`` (`later`), empty for every other type.
    public var action: String
    /// When it happened on the device (Unix seconds).
    public var at: Int64

    public init(messageID: String, type: AppEventType, action: String = "", at: Int64) {
        self.messageID = messageID
        self.type = type
        self.action = action
        self.at = at
    }
}

/// What happened to a message on a device.
public enum AppEventType: String, Sendable, Hashable, CaseIterable, Codable {
    /// The app (Android, web) or the notification service extension (iOS) got the message.
    case received
    /// The notification was posted (Android after `notify`, web after `showNotification`; iOS does not
    /// report it).
    case displayed
    /// The reader tapped the notification.
    case opened
    /// The reader swiped it away.
    case dismissed
    /// The reader tapped one of its buttons (``AppEvent/action`` names which).
    case action
}

/// Why one event of a request was not recorded; the stable string is what the response's
/// `rejected[].reason` says.
public enum EventRejection: String, Sendable, Hashable, CaseIterable, Codable {
    /// The element of `events` is not a JSON object.
    case notAnObject = "not_an_object"
    /// `message_id` is absent, not a string, or not 32 lowercase hex digits.
    case badMessageID = "bad_message_id"
    /// No outbox message has this id.
    case unknownMessage = "unknown_message"
    /// `type` is absent or not a string.
    case missingType = "missing_type"
    /// `type` is none of received, displayed, opened, dismissed, action.
    case unknownType = "unknown_type"
    /// `type` is `action` without an `action`.
    case missingAction = "missing_action"
    /// `action` on a type other than `action`.
    case unexpectedAction = "unexpected_action"
    /// `action` is not a string of 1–64 letters, digits, `_`, `-` or `.`.
    case badAction = "bad_action"
    /// `at` is absent or not a string.
    case missingAt = "missing_at"
    /// `at` is not an RFC 3339 instant.
    case badAt = "bad_at"
    /// `at` is more than a day after the collector received it.
    case future = "future"
    /// `at` is before the message was written to the outbox.
    case beforeMessage = "before_message"
    /// An `action` of `fewer`, `pause` or `off` without a `reply_key` valid for its `message_id`
    /// (or a collector without `--reply-key-file`): nothing recorded or changed.
    case badReplyKey = "bad_reply_key"
}

/// An event's position in its request, and the event or why it was refused.
public struct IndexedEvent: Sendable, Hashable {
    public var index: Int
    public var event: AppEvent

    public init(index: Int, event: AppEvent) {
        self.index = index
        self.event = event
    }
}

/// One refused event of a request.
public struct RejectedEvent: Sendable, Hashable, Codable {
    public var index: Int
    public var reason: EventRejection

    public init(index: Int, reason: EventRejection) {
        self.index = index
        self.reason = reason
    }
}

/// What a request's events came to: the response body of `POST /v1/events`.
public struct EventBatchResult: Sendable, Hashable, Codable {
    /// Events recorded now.
    public var accepted: Int
    /// Events already recorded (the same message, type and action), by an earlier request or earlier
    /// in this one.
    public var duplicates: Int
    /// Refused events, by index.
    public var rejected: [RejectedEvent]
    /// Of ``accepted``, events of test sends (`digest send-test`): kept apart, in no report.
    public var test: Int

    public init(accepted: Int = 0, duplicates: Int = 0, rejected: [RejectedEvent] = [], test: Int = 0) {
        self.accepted = accepted
        self.duplicates = duplicates
        self.rejected = rejected
        self.test = test
    }
}

/// A message sent to an editor's own device (`digest send-test`): never in the outbox, recorded so
/// that the device's events are taken (and kept out of every report) and test sends are counted.
public struct TestSend: Sendable, Hashable {
    /// The message's id, fresh for each test send.
    public var messageID: String
    /// The test device's name, as in the test devices file.
    public var device: String
    public var userID: String
    public var week: String
    public var provider: Provider
    public var platform: String
    public var variant: String

    public init(messageID: String, device: String, userID: String, week: String, provider: Provider, platform: String, variant: String) {
        self.messageID = messageID
        self.device = device
        self.userID = userID
        self.week = week
        self.provider = provider
        self.platform = platform
        self.variant = variant
    }
}
