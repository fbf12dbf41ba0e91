import CoreMetrics
import DigestCore
import DigestStore
import Metrics

/// The sender's metrics through swift-metrics; the program chooses the backend (Prometheus text on
/// `--metrics-port` in `digest send`, served by DigestServer's `OperatorEndpoint`).
///
/// Every metric carries the `provider` it sends for (`fcm`, `apns`): one process with a sender per
/// provider reports each apart.
struct SenderMetrics: Sendable {
    let provider: Provider
    let sent: Counter
    let validated: Counter
    let released: Counter
    let latency: Metrics.Timer
    let inFlight: Gauge
    /// The pacer's steady rate, messages a second (0: unpaced).
    let ratePerSecond: Gauge
    /// Time sends waited for the pacer.
    let pacedMicroseconds: Counter
    /// 429 answers with a Retry-After that held every connection (or held it longer).
    let quotaHolds: Counter
    /// Requests the server refused unprocessed (GOAWAY, REFUSED_STREAM), posted again at once.
    let refused: Counter

    init(provider: Provider) {
        self.provider = provider
        let dimensions = [("provider", provider.rawValue)]
        sent = Counter(label: "digest_sender_sent_total", dimensions: dimensions)
        validated = Counter(label: "digest_sender_validated_total", dimensions: dimensions)
        released = Counter(label: "digest_sender_released_total", dimensions: dimensions)
        latency = Metrics.Timer(label: "digest_sender_request_duration_seconds", dimensions: dimensions)
        inFlight = Gauge(label: "digest_sender_in_flight", dimensions: dimensions)
        ratePerSecond = Gauge(label: "digest_sender_rate_limit_per_second", dimensions: dimensions)
        pacedMicroseconds = Counter(label: "digest_sender_paced_microseconds_total", dimensions: dimensions)
        quotaHolds = Counter(label: "digest_sender_quota_holds_total", dimensions: dimensions)
        refused = Counter(label: "digest_sender_refused_total", dimensions: dimensions)
    }

    func retried(_ code: String) {
        Counter(label: "digest_sender_retried_total", dimensions: [("provider", provider.rawValue), ("reason", code)]).increment()
    }

    func postponed(_ code: String) {
        Counter(label: "digest_sender_postponed_total", dimensions: [("provider", provider.rawValue), ("reason", code)]).increment()
    }

    func dead(_ code: String) {
        Counter(label: "digest_sender_dead_total", dimensions: [("provider", provider.rawValue), ("reason", code)]).increment()
    }
}
