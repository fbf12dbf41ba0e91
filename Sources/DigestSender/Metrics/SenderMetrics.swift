import CoreMetrics
import Metrics

/// The sender's metrics through swift-metrics; the program chooses the backend (Prometheus text on
/// `--metrics-port` in `digest send`, served by DigestServer's `OperatorEndpoint`).
struct SenderMetrics: Sendable {
    let sent = Counter(label: "digest_sender_sent_total")
    let validated = Counter(label: "digest_sender_validated_total")
    let released = Counter(label: "digest_sender_released_total")
    let latency = Metrics.Timer(label: "digest_sender_request_duration_seconds")
    let inFlight = Gauge(label: "digest_sender_in_flight")
    /// The pacer's steady rate, messages a second (0: unpaced).
    let ratePerSecond = Gauge(label: "digest_sender_rate_limit_per_second")
    /// Time sends waited for the pacer.
    let pacedMicroseconds = Counter(label: "digest_sender_paced_microseconds_total")
    /// 429 answers with a Retry-After that held every connection (or held it longer).
    let quotaHolds = Counter(label: "digest_sender_quota_holds_total")
    /// Requests the server refused unprocessed (GOAWAY, REFUSED_STREAM), posted again at once.
    let refused = Counter(label: "digest_sender_refused_total")

    func retried(_ code: String) { Counter(label: "digest_sender_retried_total", dimensions: [("reason", code)]).increment() }

    func dead(_ code: String) { Counter(label: "digest_sender_dead_total", dimensions: [("reason", code)]).increment() }
}
