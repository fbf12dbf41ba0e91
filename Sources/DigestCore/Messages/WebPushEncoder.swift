/// Encodes standard Web Push messages, one per subscription: the plaintext a service worker's `push`
/// event receives (`event.data.json()`), and the ``WebPushHeaders`` its outbox row keeps beside it. The
/// sender encrypts the plaintext to the subscription's keys at every try (RFC 8291), so the run never
/// does.
///
/// The plaintext is one compact JSON object: the members of the FCM `webpush.notification` of the same
/// plan (`title`, `body`, `icon`, `image`, `badge`, `actions`, `tag`: the same bytes), then the keys
/// the FCM web message carries in its top-level `data` (`message_id`, `digest_id`, `deep_link`; the
/// deep link is what FCM's `fcm_options.link` opens). So the texts, variants and budgets are the FCM
/// web message's, and the plaintext is what the planner's web budget counts beside it, within the
/// 3,993 bytes one aes128gcm record holds.
///
/// ```swift
/// let webPush = WebPushEncoder()
/// let message = webPush.message(for: plan, device: Device(endpoint: endpoint, keys: keys))!
/// // outbox row: message = message.plaintext, headers = message.headers.json
/// ```
package struct WebPushEncoder: Sendable {
    /// Writes the notification and data the plaintext is made of; its configuration applies.
    package let encoder: NotificationEncoder

    package init(encoder: NotificationEncoder = .init()) {
        self.encoder = encoder
    }

    /// One message for one subscription, with its earlier ``OutboxMessage/messageID(dedupeKey:)``;
    /// `nil` for a device without subscription keys, which cannot be encrypted to.
    package func message(for plan: NotificationPlan, device: Device) -> WebPushMessage? {
        guard let keys = device.subscriptionKeys else { return nil }
        let id = OutboxMessage.messageID(dedupeKey: OutboxMessage.dedupeKey(week: plan.week, userID: plan.userID, token: device.token))
        return messages(for: encoder.encode(plan, platforms: [.web]), keys: [keys], messageIDs: [id])[0]
    }

    /// One message per subscription's keys, in order, from parts encoded before (the planner's last
    /// budget check), with each `message_id` made by the caller, who keeps it with the outbox row.
    package func messages(for encoded: EncodedPlan, keys: [Device.SubscriptionKeys], messageIDs: [String]) -> [WebPushMessage] {
        var encoded = encoded
        let (plaintext, idOffset) = encoded.webPushPlaintext(encoder: encoder)
        let plan = encoded.plan
        let topic = encoder.collapseKey(plan)
        let expiresAt = encoder.expiresAt(plan)
        return zip(keys, messageIDs).map { keys, messageID in
            WebPushMessage(
                plaintext: encoder.filling(plaintext, at: idOffset, with: messageID),
                headers: WebPushHeaders(
                    urgency: .normal, topic: WebPushHeaders.isValidTopic(topic) ? topic : nil, expiresAt: expiresAt,
                    p256dh: keys.p256dh, auth: keys.auth))
        }
    }
}

/// One Web Push message: what the outbox row of a subscription holds.
package struct WebPushMessage: Sendable, Hashable {
    /// The JSON the service worker receives, exactly as encrypted and sent: the row's `message`.
    package var plaintext: [UInt8]
    /// `Urgency`, `Topic`, the expiry and the keys to encrypt to: the row's `headers` (``WebPushHeaders/json``).
    package var headers: WebPushHeaders

    package init(plaintext: [UInt8], headers: WebPushHeaders) {
        self.plaintext = plaintext
        self.headers = headers
    }
}
