/// The push service a device's messages go through; its raw value is the stable name the input
/// files, the stores and the outbox rows use.
public enum Provider: String, Sendable, Hashable, CaseIterable, Codable {
    /// Firebase Cloud Messaging, HTTP v1: the token is an FCM registration token.
    case fcm
    /// Apple Push Notification service, direct: the token is the APNs device token (lower-case hex).
    case apns
    /// Standard Web Push (RFC 8030, 8291, 8292): the token is the subscription's endpoint URL, and the
    /// device keeps the subscription's keys.
    case webpush
}
