import Foundation  // URLComponents: whether a top pick's URL is one a notification may open

/// Encodes a plan's notification for every provider: the texts, link, TTL, priorities and sections
/// every provider's message is made of (its ``Configuration`` is the run's delivery settings), which
/// ``APNsEncoder`` and ``WebPushEncoder`` build on; and, itself, FCM HTTP v1 request bodies
/// (`{"message":{…}}`), one per device token, with only the section of the token's platform. Keys are
/// written in a fixed order, so the same plan always gives the same bytes.
///
/// The keys every app reads (`message_id`, `digest_id`, `deep_link`) are written once, where the
/// token's platform takes them from: at the start of `android.data` on Android (FCM hands an Android
/// app `android.data` instead of the top-level `data`, so an Android message has no top-level
/// `data`), in the top-level `data` on iOS (custom keys beside `aps` in the APNs payload) and on the
/// web (the push's data). `message_id` (``OutboxMessage/messageID(dedupeKey:)``) is the one per-device
/// key, with, when the run has `--reply-key-file`, its `reply_key` (``ReplyKeys/sign(messageID:)``)
/// right after it: the shared parts are encoded with placeholders of their fixed lengths (so the
/// budget counts the real bytes) and each device's message gets its own id and key in place. A
/// plan's `fewer_topic` follows them; Android's data carries `picks`, iOS's `aps` the category and,
/// when set, the interruption level.
public struct NotificationEncoder: Sendable {
    /// Delivery settings shared by every message of a run.
    public struct Configuration: Sendable, Hashable {
        /// The weekly page, `<linkBase>/<week>` (https): what BigText and Default messages open
        /// (`deep_link`, web `fcm_options.link`), and an Image message whose top pick's URL is not https.
        public var linkBase: String = "https://digest.example/weekly"
        /// How long a message stays deliverable.
        public var ttlSeconds: Int = 604_800
        /// Android priority: `normal` lets the device batch it.
        public var androidPriority: String = "normal"
        /// APNs priority: 5 is power-friendly.
        public var apnsPriority: Int = 5
        /// The iOS notification category, `aps.category` (`--ios-category`): the app registers its
        /// actions (`UNNotificationCategory`, docs/014).
        public var apnsCategory: String = "digest"
        /// iOS groups notifications by thread id.
        public var threadID: String = "weekly-digest"
        /// Web icon used when there is no icon rendition.
        public var webIcon: String?
        /// Web badge (monochrome, 96 px).
        public var webBadge: String?
        /// `--ios-interruption-level`: `aps.interruption-level` (`passive` or `active`; `nil`: no key).
        package var iosInterruptionLevel: String?

        public init() {}
    }

    public let configuration: Configuration
    /// `--reply-key-file`: when set, every message carries its `reply_key` beside `message_id`.
    package let replyKeys: ReplyKeys?

    /// The TTL as Android's section and the web's headers write it, made once.
    private let androidTTL: String
    private let webTTL: String

    public init(configuration: Configuration = .init()) {
        self.init(configuration: configuration, replyKeys: nil)
    }

    package init(configuration: Configuration = .init(), replyKeys: ReplyKeys?) {
        self.configuration = configuration
        self.replyKeys = replyKeys
        androidTTL = "\(configuration.ttlSeconds)s"
        webTTL = String(configuration.ttlSeconds)
    }

    /// One request body for one device.
    public func message(for plan: NotificationPlan, device: Device) -> [UInt8] {
        messages(for: plan, devices: [device])[0]
    }

    /// One request body per device, in order; the shared parts are encoded once.
    public func messages(for plan: NotificationPlan, devices: [Device]) -> [[UInt8]] {
        messages(for: encode(plan, platforms: Set(devices.map(\.platform))), devices: devices)
    }

    /// One request body per device from parts encoded before (the planner's last budget check); a
    /// device whose platform was not encoded gets its section encoded here.
    public func messages(for encoded: EncodedPlan, devices: [Device]) -> [[UInt8]] {
        let plan = encoded.plan
        let ids = devices.map {
            OutboxMessage.messageID(dedupeKey: OutboxMessage.dedupeKey(week: plan.week, userID: plan.userID, token: $0.token))
        }
        return messages(for: encoded, devices: devices, messageIDs: ids)
    }

    /// The same, with each device's `message_id` (``OutboxMessage/messageID(dedupeKey:)``) made by the
    /// caller, who keeps it with the outbox row.
    public func messages(for encoded: EncodedPlan, devices: [Device], messageIDs: [String]) -> [[UInt8]] {
        var encoded = encoded
        let label = analyticsLabel(encoded.plan)
        return zip(devices, messageIDs).map { device, messageID in
            let (section, sectionIDOffset) = encoded.section(device.platform, encoder: self)
            var writer = JSONWriter(capacity: encoded.data.count + section.count + device.token.utf8.count + 128)
            writer.beginObject()
            writer.key("message")
            writer.beginObject()
            writer.field("token", device.token)
            if let offset = sectionIDOffset {
                // Android: the section's data holds every key, and the message no top-level data.
                writer.key(Self.sectionKey(device.platform))
                writeFilled(section, at: offset, with: messageID, into: &writer)
            } else {
                writer.key("data")
                writeFilled(encoded.data, at: encoded.dataIDOffset, with: messageID, into: &writer)
                writer.key(Self.sectionKey(device.platform))
                writer.raw(section)
            }
            writer.key("fcm_options")
            writer.beginObject()
            writer.field("analytics_label", label)
            writer.endObject()
            writer.endObject()
            writer.endObject()
            return writer.bytes
        }
    }

    /// The parts of `plan`'s messages shared by its devices: the section of each of `platforms` (and,
    /// for iOS and web, the top-level data), with the bytes each platform's budget counts.
    public func encode(_ plan: NotificationPlan, platforms: Set<Platform>) -> EncodedPlan {
        var encoded = EncodedPlan(plan: plan, link: link(plan))
        for platform in Platform.allCases where platforms.contains(platform) {
            _ = encoded.section(platform, encoder: self)
        }
        return encoded
    }

    /// The FCM v1 field holding a platform's section.
    package static func sectionKey(_ platform: Platform) -> String {
        switch platform {
        case .android: "android"
        case .ios: "apns"
        case .web: "webpush"
        }
    }

    /// The bytes a platform's budget counts, what its request carries: for Android the `android`
    /// section alone (its `data` holds every key; there is no top-level `data`), for iOS the APNs
    /// payload with the top-level data's keys beside `aps` (what APNs limits: ``APNsEncoder``'s payload
    /// exactly; FCM builds the same from `apns.payload` and `data`), for the web the top-level data
    /// plus the `webpush` section, or the Web Push plaintext (``WebPushEncoder``) should it be longer.
    package func budgetBytes(for plan: NotificationPlan, platform: Platform) -> Int {
        encode(plan, platforms: [platform]).bytes[platform]!
    }

    package func collapseKey(_ plan: NotificationPlan) -> String { "digest-\(plan.week)" }

    /// FCM's `fcm_options.analytics_label`, `digest-<week>-<variant>` (FCM takes
    /// `^[a-zA-Z0-9-_.~%]{1,50}$`; a week and a variant's name are within it). FCM's delivery data in
    /// the Firebase console and BigQuery export is grouped by it; it is not part of what the device gets.
    package func analyticsLabel(_ plan: NotificationPlan) -> String { "digest-\(plan.week)-\(plan.variant.rawValue)" }

    /// What stands for `message_id` in the shared parts until a device's id fills it: the same length.
    static let messageIDPlaceholder = String(repeating: "0", count: OutboxMessage.messageIDLength)

    /// What stands for `reply_key` in the shared parts until a device's key fills it: the same length.
    static let replyKeyPlaceholder = String(repeating: "0", count: ReplyKeys.keyLength)

    /// From the start of the `message_id` placeholder to the start of the `reply_key` one, which
    /// follows it: `<id>","reply_key":"<key>`.
    static let replyKeyDistance = OutboxMessage.messageIDLength + #"","reply_key":""#.utf8.count

    /// `bytes` with the `message_id` placeholder at `offset` replaced by `id` (of the same length).
    static func filling(_ bytes: [UInt8], at offset: Int, with id: [UInt8]) -> [UInt8] {
        var bytes = bytes
        bytes.replaceSubrange(offset..<(offset + id.count), with: id)
        return bytes
    }

    /// `bytes` with the `message_id` placeholder at `offset` replaced by `messageID`, and, with reply
    /// keys, the `reply_key` placeholder after it by the message's key (``ReplyKeys/sign(messageID:)``).
    package func filling(_ bytes: [UInt8], at offset: Int, with messageID: String) -> [UInt8] {
        var bytes = Self.filling(bytes, at: offset, with: Array(messageID.utf8))
        if let replyKeys {
            let key = Array(replyKeys.sign(messageID: messageID).utf8)
            let start = offset + Self.replyKeyDistance
            bytes.replaceSubrange(start..<(start + key.count), with: key)
        }
        return bytes
    }

    /// Writes `bytes` as one value with the `message_id` placeholder at `offset` (and the `reply_key`
    /// one after it) filled in place, as ``filling(_:at:with:)`` fills them without a copy of `bytes`.
    func writeFilled(_ bytes: [UInt8], at offset: Int, with messageID: String, into writer: inout JSONWriter) {
        writer.raw(bytes)
        let start = writer.bytes.count - bytes.count + offset
        writer.overwrite(at: start, with: messageID.utf8)
        if let replyKeys { writer.overwrite(at: start + Self.replyKeyDistance, with: replyKeys.sign(messageID: messageID).utf8) }
    }

    /// Android builds at most this many buttons from `data.actions`.
    package static let androidMaxActions = 3
    /// Browsers show at most this many buttons.
    package static let webMaxActions = 2

    /// A web notification's buttons: the first two that are not `open` (the notification's own click).
    package static func webActions(_ actions: [NotificationAction]) -> ArraySlice<NotificationAction> {
        actions.filter { $0.id != "open" }.prefix(webMaxActions)
    }

    /// The weekly page, `<linkBase>/<week>`.
    package func weeklyLink(_ plan: NotificationPlan) -> String { "\(configuration.linkBase)/\(plan.week)" }

    /// What tapping the notification opens (`deep_link`, web `fcm_options.link`): an Image message
    /// ("Top pick: …") opens the top pick's own URL when ``isOpenableLink(_:)`` takes it; every other
    /// message, and an Image one whose top pick's URL it refuses, opens the weekly page.
    package func link(_ plan: NotificationPlan) -> String {
        if plan.variant == .image, let url = plan.topPickURL, Self.isOpenableLink(url) { return url }
        return weeklyLink(plan)
    }

    /// Whether a catalogue URL may be a notification's link as it is: it starts with `https://`, has a
    /// host, and parses as RFC 3986 has it, with nothing left to percent-encode (no spaces, control
    /// or non-ASCII characters), so the app and the browser open exactly these bytes.
    package static func isOpenableLink(_ url: String) -> Bool {
        guard url.hasPrefix("https://"), let parts = URLComponents(string: url, encodingInvalidCharacters: false) else {
            return false
        }
        return parts.scheme == "https" && !(parts.host ?? "").isEmpty
    }

    /// The top-level `data` (iOS and web) with the `message_id` placeholder, and where the placeholder
    /// starts.
    func topLevelData(_ plan: NotificationPlan, link: String) -> (data: [UInt8], idOffset: Int) {
        var writer = JSONWriter(capacity: 128 + link.utf8.count)
        writer.beginObject()
        let offset = writeSharedData(&writer, plan, link: link)
        writer.endObject()
        return (writer.bytes, offset)
    }

    /// The keys every app reads from the message's data, where its platform takes them from: the
    /// top-level `data` (iOS, web) or the start of `android.data` (Android). Returns where the
    /// `message_id` placeholder's characters start in the writer's bytes.
    private func writeSharedData(_ writer: inout JSONWriter, _ plan: NotificationPlan, link: String) -> Int {
        writer.key("message_id")
        let offset = writer.bytes.count + 1  // after the opening quote; hex needs no escaping
        writer.value(Self.messageIDPlaceholder)
        if replyKeys != nil { writer.field("reply_key", Self.replyKeyPlaceholder) }
        if let topic = plan.fewerTopic { writer.field("fewer_topic", topic) }
        writer.field("digest_id", plan.digestID)
        writer.field("deep_link", link)
        return offset
    }

    /// The Android section with the `message_id` placeholder in `android.data`, and where it starts.
    func androidSection(_ plan: NotificationPlan, link: String) -> (section: [UInt8], idOffset: Int) {
        var writer = JSONWriter(capacity: 1024 + link.utf8.count)
        writer.beginObject()
        writer.field("collapse_key", collapseKey(plan))
        writer.field("ttl", androidTTL)
        writer.field("priority", configuration.androidPriority)
        writer.key("data")
        writer.beginObject()
        let offset = writeSharedData(&writer, plan, link: link)
        writer.field("title", plan.title)
        writer.field("body", plan.body)
        writer.field("type", plan.variant.rawValue)
        // A string, as every FCM data value: the app's badge count.
        writer.field("picks", String(plan.picks.count))
        if let image = plan.image {
            writer.field("imageUrl", image.hero.url)
            if let icon = image.icon { writer.field("iconUrl", icon.url) }
        }
        var actions = JSONWriter(capacity: 96)
        actions.beginArray()
        for action in plan.actions.prefix(Self.androidMaxActions) {
            actions.beginObject()
            actions.field("id", action.id)
            actions.field("title", action.title)
            actions.endObject()
        }
        actions.endArray()
        writer.field("actions", actions.string)
        writer.endObject()
        writer.endObject()
        return (writer.bytes, offset)
    }

    /// The APNs payload of the FCM `apns` section, `{"aps":{…}}` and `imageUrl` on Image messages:
    /// the one place it is written. The direct APNs payload (``EncodedPlan``'s, for ``APNsEncoder``)
    /// is these bytes with the top-level data's keys added beside `aps`, as FCM adds them.
    func apnsPayload(_ plan: NotificationPlan) -> [UInt8] {
        var payload = JSONWriter(capacity: 1024)
        payload.beginObject()
        payload.key("aps")
        payload.beginObject()
        payload.key("alert")
        payload.beginObject()
        payload.field("title", plan.title)
        payload.field("body", plan.body)
        payload.endObject()
        payload.field("category", configuration.apnsCategory)
        payload.field("thread-id", configuration.threadID)
        if let level = configuration.iosInterruptionLevel { payload.field("interruption-level", level) }
        // Always: the service extension reports receipt (and attaches the image when there is one).
        payload.field("mutable-content", 1)
        payload.endObject()
        if let image = plan.image { payload.field("imageUrl", image.hero.url) }
        payload.endObject()
        return payload.bytes
    }

    /// The APNs headers every device of `plan` shares; ``APNsEncoder`` adds `apns-id` and `apns-topic`.
    package func apnsHeaders(_ plan: NotificationPlan) -> APNsHeaders {
        APNsHeaders(priority: configuration.apnsPriority, expiration: expiresAt(plan), collapseID: collapseKey(plan))
    }

    /// When `plan`'s messages stop being worth delivering, Unix seconds: its due time plus the TTL
    /// (`apns-expiration`; a Web Push row's `expires`, from which each try's `TTL` is counted).
    package func expiresAt(_ plan: NotificationPlan) -> Int64 { plan.deliverAt + Int64(configuration.ttlSeconds) }

    /// The FCM `apns` section (headers, payload, `fcm_options.image`) and its payload alone.
    func apnsSection(_ plan: NotificationPlan) -> (section: [UInt8], payload: [UInt8]) {
        let payload = apnsPayload(plan)
        var writer = JSONWriter(capacity: payload.count + 256)
        writer.beginObject()
        writer.key("headers")
        apnsHeaders(plan).write(into: &writer)
        writer.key("payload")
        writer.raw(payload)
        if let image = plan.image {
            writer.key("fcm_options")
            writer.beginObject()
            writer.field("image", image.hero.url)
            writer.endObject()
        }
        writer.endObject()
        return (writer.bytes, payload)
    }

    /// A JSON object with the members of `data` (the top-level data, `{"message_id":…}`) after its
    /// own, and where the `message_id` placeholder starts in it: the direct APNs payload made of the
    /// FCM `apns.payload` (`{"aps":…}`), and the Web Push plaintext made of the FCM
    /// `webpush.notification`. Neither object is empty, and `data` never is.
    static func withDataMembers(_ object: [UInt8], data: [UInt8], dataIDOffset: Int) -> (bytes: [UInt8], idOffset: Int) {
        var bytes = object.dropLast()  // `}`
        bytes.append(UInt8(ascii: ","))
        bytes.append(contentsOf: data.dropFirst())  // after `{`
        return (Array(bytes), object.count + dataIDOffset - 1)
    }

    /// The FCM `webpush` section: headers, the notification (``webNotification(_:)``), and the link.
    func webpushSection(_ plan: NotificationPlan, link: String, notification: [UInt8]) -> [UInt8] {
        var writer = JSONWriter(capacity: notification.count + 128 + link.utf8.count)
        writer.beginObject()
        writer.key("headers")
        writer.beginObject()
        writer.field("TTL", webTTL)
        writer.field("Urgency", "normal")
        writer.endObject()
        writer.key("notification")
        writer.raw(notification)
        writer.key("fcm_options")
        writer.beginObject()
        writer.field("link", link)
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }

    /// What a browser shows, the FCM `webpush.notification` object: the one place it is written. The
    /// Web Push plaintext (``WebPushEncoder``) is these members with the top-level data's after them.
    func webNotification(_ plan: NotificationPlan) -> [UInt8] {
        var writer = JSONWriter(capacity: 1024)
        writer.beginObject()
        writer.field("title", plan.title)
        writer.field("body", plan.body)
        if let icon = plan.image?.icon?.url ?? configuration.webIcon { writer.field("icon", icon) }
        if let image = plan.image { writer.field("image", image.hero.url) }
        if let badge = configuration.webBadge { writer.field("badge", badge) }
        writer.key("actions")
        writer.beginArray()
        for action in Self.webActions(plan.actions) {
            writer.beginObject()
            writer.field("action", action.id)
            writer.field("title", action.title)
            writer.endObject()
        }
        writer.endArray()
        writer.field("tag", collapseKey(plan))
        writer.endObject()
        return writer.bytes
    }
}

/// A plan's shared message parts (``NotificationEncoder/encode(_:platforms:)``): encoded once for the budget
/// check and reused for every device's message.
public struct EncodedPlan: Sendable {
    /// The plan the parts were encoded from.
    public internal(set) var plan: NotificationPlan
    /// The top-level data, with the `message_id` placeholder at `dataIDOffset`: encoded with the
    /// first iOS or web section (an Android message has none, so an Android-only plan never makes it).
    private(set) var data: [UInt8] = []
    private(set) var dataIDOffset = 0
    /// The direct APNs payload (``APNsEncoder``), with the `message_id` placeholder at
    /// `apnsPayloadIDOffset`: encoded with the iOS section, whose budget counts it.
    private(set) var apnsPayload: [UInt8] = []
    private(set) var apnsPayloadIDOffset = 0
    /// The Web Push plaintext (``WebPushEncoder``), with the `message_id` placeholder at
    /// `webPushPlaintextIDOffset`: encoded with the web section, whose budget counts it too.
    private(set) var webPushPlaintext: [UInt8] = []
    private(set) var webPushPlaintextIDOffset = 0
    /// What the message opens (``NotificationEncoder/link(_:)``), in `data` and the sections alike.
    let link: String
    /// Each platform's section once encoded, in `Platform.allCases` order, with where the
    /// `message_id` placeholder starts in it when the section carries the keys (Android).
    private var sections: [(bytes: [UInt8], idOffset: Int?)?] = Array(repeating: nil, count: Platform.allCases.count)
    /// The bytes each encoded platform's budget counts (``NotificationEncoder/budgetBytes(for:platform:)``).
    public private(set) var bytes: [Platform: Int] = [:]

    init(plan: NotificationPlan, link: String) {
        self.plan = plan
        self.link = link
    }

    /// The platform's section, encoded now if it was not yet, and where its `message_id`
    /// placeholder starts when the section itself carries the keys (Android; `nil` when the message's
    /// top-level data does).
    mutating func section(_ platform: Platform, encoder: NotificationEncoder) -> (bytes: [UInt8], idOffset: Int?) {
        let slot = Platform.allCases.firstIndex(of: platform)!
        if let section = sections[slot] { return section }
        let section: [UInt8]
        var idOffset: Int?
        if platform != .android && data.isEmpty { (data, dataIDOffset) = encoder.topLevelData(plan, link: link) }
        switch platform {
        case .android:
            // The whole message's keys are in the section: no top-level data is sent.
            (section, idOffset) = encoder.androidSection(plan, link: link)
            bytes[platform] = section.count
        case .ios:
            let payload: [UInt8]
            (section, payload) = encoder.apnsSection(plan)
            // APNs limits the payload, not the headers around it: the payload as APNs gets it, with
            // the data's keys beside `aps` (sent so directly; FCM builds the same, plus keys of its own).
            (apnsPayload, apnsPayloadIDOffset) = NotificationEncoder.withDataMembers(payload, data: data, dataIDOffset: dataIDOffset)
            bytes[platform] = apnsPayload.count
        case .web:
            let notification = encoder.webNotification(plan)
            section = encoder.webpushSection(plan, link: link, notification: notification)
            (webPushPlaintext, webPushPlaintextIDOffset) = NotificationEncoder.withDataMembers(
                notification, data: data, dataIDOffset: dataIDOffset)
            // The FCM request carries the data and the section; a Web Push subscription gets the
            // plaintext, which must fit one aes128gcm record under the same ceiling. The FCM bytes hold
            // every member of the plaintext and more (headers, the link a second time), so they are the
            // larger today; counting both keeps the plaintext within the budget whatever either becomes.
            bytes[platform] = max(data.count + section.count, webPushPlaintext.count)
        }
        sections[slot] = (section, idOffset)
        return (section, idOffset)
    }

    /// The direct APNs payload and where its `message_id` placeholder starts, the iOS section
    /// encoded first if it was not.
    mutating func apnsDirectPayload(encoder: NotificationEncoder) -> (bytes: [UInt8], idOffset: Int) {
        _ = section(.ios, encoder: encoder)
        return (apnsPayload, apnsPayloadIDOffset)
    }

    /// The Web Push plaintext and where its `message_id` placeholder starts, the web section encoded
    /// first if it was not.
    mutating func webPushPlaintext(encoder: NotificationEncoder) -> (bytes: [UInt8], idOffset: Int) {
        _ = section(.web, encoder: encoder)
        return (webPushPlaintext, webPushPlaintextIDOffset)
    }
}
