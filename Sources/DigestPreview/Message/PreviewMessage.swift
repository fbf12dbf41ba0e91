package import DigestCore
import Foundation

/// What an FCM HTTP v1 request body, a direct APNs message or a Web Push plaintext asks devices to
/// show, one ``NotificationContent`` per platform section it carries, read with the field rules each
/// platform applies. A direct APNs message (``init(json:)`` tells the shapes apart) is read as the
/// `apns` section of an FCM body, and a Web Push plaintext as the `webpush` section's notification, so
/// each renders as the FCM message of the same plan.
///
/// Parsing never fails on content: a missing title, an unknown section or a non-string data value
/// becomes a note that the preview draws. Only bytes that are not a JSON object are refused.
///
/// ```swift
/// let message = try PreviewMessage(json: Array(row.message.utf8))
/// for content in message.contents { … }
/// ```
package struct PreviewMessage: Sendable, Hashable {
    /// One entry per platform section, in the order android, ios, web.
    package var contents: [NotificationContent]
    /// Problems with the message as a whole (unknown sections, no platform section).
    package var notes: [String]

    package init(contents: [NotificationContent], notes: [String] = []) {
        self.contents = contents
        self.notes = notes
    }

    /// Reads any message the outbox or a file holds: an FCM request body `{"message":{…}}` (a bare
    /// message object is accepted too), a direct APNs message, either its payload alone
    /// (`{"aps":{…},…}`, what an APNs outbox row's `message` holds) or `{"headers":{…},"payload":{…}}`
    /// (the shape of an FCM `apns` section, without `fcm_options`), or a Web Push plaintext
    /// (`{"title":…,"body":…,…}`, what a Web Push outbox row's `message` holds).
    package init(json: [UInt8]) throws(PreviewError) {
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: Data(json), options: [.fragmentsAllowed])
        } catch {
            throw PreviewError(.malformedMessage, "the message is not JSON: \(error.localizedDescription)")
        }
        guard let object = root as? [String: Any] else {
            throw PreviewError(.malformedMessage, "the message is not a JSON object")
        }
        if let section = Self.apnsDirect(object) {
            self.init(contents: [Self.apns(section, shared: [:])])
            return
        }
        if let section = Self.webPushPlaintext(object) {
            self.init(contents: [Self.webpush(section, shared: [:])])
            return
        }
        var notes: [String] = []
        let message: [String: Any]
        if let inner = object["message"] as? [String: Any] {
            message = inner
        } else {
            message = object
            if object["message"] != nil { notes.append("\"message\" is not an object") }
        }
        let known: Set<String> = [
            "token", "topic", "condition", "name", "data", "notification", "android", "apns", "webpush", "fcm_options",
        ]
        for key in message.keys.sorted() where !known.contains(key) {
            notes.append("unknown section \"\(key)\" ignored")
        }
        let shared = message["notification"] as? [String: Any] ?? [:]
        var contents: [NotificationContent] = []
        if let android = message["android"] {
            contents.append(Self.android(android, shared: shared))
        }
        if let apns = message["apns"] {
            contents.append(Self.apns(apns, shared: shared))
        }
        if let webpush = message["webpush"] {
            contents.append(Self.webpush(webpush, shared: shared))
        }
        if contents.isEmpty {
            if shared.isEmpty {
                notes.append("no android, apns or webpush section: nothing a device would show")
                var empty = NotificationContent(platform: .android)
                empty.notes.append("no platform section")
                empty.checkTexts()
                contents.append(empty)
            } else {
                notes.append("no platform section: each platform shown with the shared notification block")
                contents = [
                    Self.android([:], shared: shared), Self.apns([:], shared: shared), Self.webpush([:], shared: shared),
                ]
            }
        }
        self.init(contents: contents, notes: notes)
    }

    /// The content for one platform, if the message carries its section.
    package func content(for platform: Platform) -> NotificationContent? {
        contents.first { $0.platform == platform }
    }

    /// A direct APNs message as the `apns` section of an FCM body would carry it, or `nil` when
    /// `object` is an FCM body: a payload (`aps` at the top) becomes the section's `payload`; a
    /// request (`payload` holding `aps`, beside `headers` at most) is one already.
    static func apnsDirect(_ object: [String: Any]) -> [String: Any]? {
        if object["message"] == nil, object["aps"] != nil { return ["payload": object] }
        if let payload = object["payload"] as? [String: Any], payload["aps"] != nil,
            Set(object.keys).isSubset(of: ["headers", "payload"])
        {
            return object
        }
        return nil
    }

    /// The keys of an FCM message, a message body around it, or an APNs message: an object holding any
    /// of them is no Web Push plaintext.
    static let envelopeKeys: Set<String> = [
        "message", "token", "topic", "condition", "name", "data", "notification", "android", "apns", "webpush", "fcm_options",
        "aps", "payload", "headers",
    ]

    /// A Web Push plaintext as the `webpush` section of an FCM body would carry it, or `nil` for any
    /// other shape: an object with a `title` or a `body` and none of the keys of an FCM or APNs
    /// message (``envelopeKeys``) becomes the section's `notification` (whose `title`, `body`, `icon`,
    /// `image` and `actions` are the plaintext's own; its `message_id`, `digest_id` and `deep_link`
    /// are not shown, as the FCM message's `data` is not).
    static func webPushPlaintext(_ object: [String: Any]) -> [String: Any]? {
        guard object["title"] != nil || object["body"] != nil, envelopeKeys.isDisjoint(with: object.keys) else { return nil }
        return ["notification": object]
    }

    // MARK: - Sections

    static func android(_ value: Any, shared: [String: Any]) -> NotificationContent {
        var content = NotificationContent(platform: .android)
        guard let section = value as? [String: Any] else {
            content.notes.append("android section is not an object")
            return content
        }
        let notification = section["notification"] as? [String: Any] ?? [:]
        let data = section["data"] as? [String: Any] ?? [:]
        for (key, value) in data.sorted(by: { $0.key < $1.key }) where !(value is String) {
            content.notes.append("android data \"\(key)\" is not a string: FCM refuses the message")
        }
        func field(_ names: String...) -> String? {
            for name in names {
                if let text = data[name] as? String { return text }
                if let text = notification[name] as? String { return text }
                if let text = shared[name] as? String { return text }
            }
            return nil
        }
        content.title = field("title")
        content.body = field("body")
        content.imageURL = field("imageUrl", "image")
        content.iconURL = field("iconUrl", "icon")
        if let actions = data["actions"] as? String {
            if let parsed = try? JSONSerialization.jsonObject(with: Data(actions.utf8)) as? [[String: Any]] {
                content.actions = parsed.compactMap { $0["title"] as? String }
                if parsed.count > 3 { content.notes.append("\(parsed.count) android actions: a notification shows the first 3") }
            } else {
                content.notes.append("android actions are not a JSON array of {id, title}")
            }
        }
        switch data["type"] as? String {
        case "BigText": content.style = .bigText
        case "Image": content.style = .bigPicture
        case "Default": content.style = .standard
        case let other?:
            content.style = content.imageURL != nil ? .bigPicture : .standard
            content.notes.append("unknown android type \"\(other)\": shown as \(content.style.rawValue)")
        case nil:
            content.style = content.imageURL != nil ? .bigPicture : ((content.body ?? "").contains("\n") ? .bigText : .standard)
        }
        if content.style == .bigPicture && content.imageURL == nil {
            content.notes.append("type Image without imageUrl: no picture to show")
        }
        content.checkTexts()
        return content
    }

    static func apns(_ value: Any, shared: [String: Any]) -> NotificationContent {
        var content = NotificationContent(platform: .ios)
        guard let section = value as? [String: Any] else {
            content.notes.append("apns section is not an object")
            return content
        }
        let payload = section["payload"] as? [String: Any] ?? [:]
        let aps = payload["aps"] as? [String: Any] ?? [:]
        switch aps["alert"] {
        case let text as String:
            content.body = text
        case let alert as [String: Any]:
            content.title = alert["title"] as? String
            content.subtitle = alert["subtitle"] as? String
            content.body = alert["body"] as? String
        default:
            break
        }
        if content.title == nil { content.title = shared["title"] as? String }
        if content.body == nil { content.body = shared["body"] as? String }
        let options = section["fcm_options"] as? [String: Any] ?? [:]
        let image = options["image"] as? String ?? payload["imageUrl"] as? String ?? shared["image"] as? String
        if let image {
            if (aps["mutable-content"] as? Int) == 1 {
                content.imageURL = image
            } else {
                content.notes.append("image without mutable-content: 1: the service extension never runs, no attachment")
            }
        }
        // The buttons are the app's: `aps.category` names the `UNNotificationCategory` it registered,
        // whose titles the renderer takes from its configuration (``PreviewRenderer/Configuration/iosCategories``).
        switch aps["category"] {
        case let category as String: content.category = category
        case nil: break
        default: content.notes.append("aps.category is not a string: iOS shows no buttons")
        }
        content.style = content.imageURL != nil ? .bigPicture : .standard
        content.checkTexts()
        return content
    }

    static func webpush(_ value: Any, shared: [String: Any]) -> NotificationContent {
        var content = NotificationContent(platform: .web)
        guard let section = value as? [String: Any] else {
            content.notes.append("webpush section is not an object")
            return content
        }
        let notification = section["notification"] as? [String: Any] ?? [:]
        content.title = notification["title"] as? String ?? shared["title"] as? String
        content.body = notification["body"] as? String ?? shared["body"] as? String
        content.iconURL = notification["icon"] as? String
        content.imageURL = notification["image"] as? String ?? shared["image"] as? String
        if let actions = notification["actions"] as? [[String: Any]] {
            content.actions = actions.compactMap { $0["title"] as? String }
            if actions.count > 2 { content.notes.append("\(actions.count) actions: Chrome shows the first 2") }
        }
        content.style = content.imageURL != nil ? .bigPicture : .standard
        content.checkTexts()
        return content
    }
}

/// How Android lays a notification out: the `type` the app reads from `android.data`.
package enum AndroidStyle: String, Sendable, Hashable, Codable, CaseIterable {
    case bigText = "BigText"
    case bigPicture = "BigPicture"
    case standard = "Default"
}

/// What one platform section asks a device to show.
package struct NotificationContent: Sendable, Hashable {
    package var platform: Platform
    package var title: String?
    /// iOS only.
    package var subtitle: String?
    package var body: String?
    /// Android's layout; on iOS and web `bigPicture` means "has an image".
    package var style: AndroidStyle = .standard
    package var imageURL: String?
    package var iconURL: String?
    /// Button titles, in order: Android's `data.actions`, the web notification's `actions`. An APNs
    /// message carries none (its buttons are the category's, ``category``).
    package var actions: [String] = []
    /// iOS only: `aps.category`, the `UNNotificationCategory` whose registered actions iOS shows.
    package var category: String?
    /// Problems the preview draws beside this platform's surfaces.
    package var notes: [String] = []

    package init(
        platform: Platform, title: String? = nil, body: String? = nil, style: AndroidStyle = .standard,
        imageURL: String? = nil, iconURL: String? = nil, actions: [String] = []
    ) {
        self.platform = platform
        self.title = title
        self.body = body
        self.style = style
        self.imageURL = imageURL
        self.iconURL = iconURL
        self.actions = actions
    }

    mutating func checkTexts() {
        if (title ?? "").trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { notes.append("title missing") }
        if (body ?? "").trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { notes.append("body missing") }
    }
}

/// A preview that cannot be made; the message says what was wrong.
package struct PreviewError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure (extensible).
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String { case malformedMessage, cairo, fonts, io }
        private let value: Value
        private init(_ value: Value) { self.value = value }
        /// The bytes are not an FCM v1 message object.
        package static let malformedMessage = Code(.malformedMessage)
        /// Cairo reported a failure (status in the message).
        package static let cairo = Code(.cairo)
        /// A required font is missing.
        package static let fonts = Code(.fonts)
        /// Reading or writing a file failed.
        package static let io = Code(.io)
        package var description: String { value.rawValue }
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }
}
