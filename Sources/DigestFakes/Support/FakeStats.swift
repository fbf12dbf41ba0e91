/// What a fake service saw, as its `stats` and `GET /stats` (JSON) tell it: one set of counters for
/// every fake, each counting what applies to it (the others stay 0).
package struct FakeStats: Sendable, Hashable, Codable {
    /// The service's own requests received: pushes (FCM: `messages:send`; APNs: all but `/stats`).
    package var requests = 0
    /// Of those, the ones that came over HTTP/2 (FCM, Web Push; the rest came over HTTP/1.1).
    package var http2Requests = 0
    /// Answers by kind: the status (APNs: `<status> <reason>`, `410 Unregistered`), or `drop`.
    package var answers: [String: Int] = [:]
    /// Distinct device tokens (Web Push: subscriptions) with a message accepted (FCM: not a dry run).
    package var delivered = 0
    /// Acceptances beyond the first per token (FCM, APNs).
    package var duplicates = 0
    /// Acceptances beyond the first per subscription (Web Push).
    package var repeats = 0
    /// Distinct messages accepted (FCM: a message is its request body; APNs: its token and payload
    /// bytes). A sender that sends an outbox row again repeats the same bytes; two weeks' digests differ.
    package var deliveredMessages = 0
    /// Acceptances of a message beyond its first (Web Push: decrypted messages by their `message_id`).
    package var duplicateMessages = 0
    /// Dry-run requests accepted (FCM).
    package var validated = 0
    /// Access tokens issued (FCM).
    package var accessTokens = 0
    /// Distinct provider tokens (JWTs) seen, valid or not (APNs).
    package var providerTokens = 0
    /// Distinct VAPID tokens seen (Web Push).
    package var vapidTokens = 0
    /// Requests decrypted; the rest were accepted unread (Web Push).
    package var decrypted = 0
    /// Most of the service's own requests waiting for their answer at once (all connections).
    package var maxInFlight = 0
    /// HTTP/2 connections opened, and the most open at once: `http2Connections` and
    /// `maxHTTP2Connections` under the names the fake APNs (HTTP/2 alone) gives them.
    package var connections = 0, maxConnections = 0
    package var http2Connections = 0, maxHTTP2Connections = 0
    /// Streams reset with REFUSED_STREAM for going beyond the advertised SETTINGS_MAX_CONCURRENT_STREAMS
    /// (APNs).
    package var refusedStreams = 0
    /// Most streams open at once on one connection.
    package var maxStreamsUsed = 0
    /// GOAWAY frames sent.
    package var goAways = 0

    package init() {}
}
