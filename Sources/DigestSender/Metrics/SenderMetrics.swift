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

    func retried(_ code: String) { Counter(label: "digest_sender_retried_total", dimensions: [("reason", code)]).increment() }

    func dead(_ code: String) { Counter(label: "digest_sender_dead_total", dimensions: [("reason", code)]).increment() }
}
