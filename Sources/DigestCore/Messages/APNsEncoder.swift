/// Encodes direct APNs requests, one per iOS device: the payload JSON exactly as sent (the request's
/// body) and its headers. The texts, link, TTL, priority, category and thread id are the
/// ``NotificationEncoder``'s, and so are the bytes: the payload is the FCM `apns.payload` (`aps`, and
/// `imageUrl` on Image messages) with the keys FCM would add from the message's `data` after it —
/// `message_id`, `digest_id`, `deep_link` — and that payload is what the planner's iOS budget counts.
///
/// ```swift
/// let apns = APNsEncoder(configuration: .init(topic: "com.example.reader"))
/// let message = apns.message(for: plan, device: Device(token: hex, platform: .ios))
/// // POST /3/device/<token> with message.headers.fields, body message.payload
/// ```
public struct APNsEncoder: Sendable {
    /// Settings of direct APNs requests beyond the ``NotificationEncoder/Configuration`` they share.
    public struct Configuration: Sendable, Hashable {
        /// `apns-topic` of a device without its own ``Device/topic``: the app's bundle id (nil: none
        /// written; the sender adds its `--apns-topic` when it sends, as the run does not know it).
        public var topic: String?
        /// Whether requests carry `apns-id` (``APNsHeaders/id(messageID:)``): the same id for a
        /// message on every retry and rerun, which APNs answers with. Without it APNs makes up one per
        /// request.
        public var sendsID = true

        public init(topic: String?) {
            self.topic = topic
        }
    }

    public let configuration: Configuration
    /// Writes the payload and the headers the FCM `apns` section shares; its configuration applies.
    public let encoder: NotificationEncoder

    public init(configuration: Configuration, encoder: NotificationEncoder = .init()) {
        self.configuration = configuration
        self.encoder = encoder
    }

    /// One request for one device.
    public func message(for plan: NotificationPlan, device: Device) -> APNsMessage {
        messages(for: encoder.encode(plan, platforms: [.ios]), devices: [device])[0]
    }

    /// One request per device, in order, with each device's earlier ``OutboxMessage/messageID(dedupeKey:)``.
    public func messages(for encoded: EncodedPlan, devices: [Device]) -> [APNsMessage] {
        let plan = encoded.plan
        let ids = devices.map {
            OutboxMessage.messageID(dedupeKey: OutboxMessage.dedupeKey(week: plan.week, userID: plan.userID, token: $0.token))
        }
        return messages(for: encoded, devices: devices, messageIDs: ids)
    }

    /// One request per device from parts encoded before (the planner's last budget check), with each
    /// device's `message_id` made by the caller, who keeps it with the outbox row. Devices are taken
    /// as iOS devices whatever their platform says.
    public func messages(for encoded: EncodedPlan, devices: [Device], messageIDs: [String]) -> [APNsMessage] {
        var encoded = encoded
        let (payload, idOffset) = encoded.apnsDirectPayload(encoder: encoder)
        let shared = encoder.apnsHeaders(encoded.plan)
        return zip(devices, messageIDs).map { device, messageID in
            var headers = shared
            headers.id = configuration.sendsID ? APNsHeaders.id(messageID: messageID) : nil
            headers.topic = device.topic ?? configuration.topic
            return APNsMessage(headers: headers, payload: encoder.filling(payload, at: idOffset, with: messageID))
        }
    }
}

/// One direct APNs request: `POST /3/device/<token>` with ``headers`` and ``payload`` as its body.
public struct APNsMessage: Sendable, Hashable {
    public var headers: APNsHeaders
    /// The payload JSON exactly as sent, at most 4,096 bytes when the planner made the plan.
    public var payload: [UInt8]

    public init(headers: APNsHeaders, payload: [UInt8]) {
        self.headers = headers
        self.payload = payload
    }
}
