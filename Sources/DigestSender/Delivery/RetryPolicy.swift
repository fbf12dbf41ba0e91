import DigestCore

/// When a failed message is tried again (docs/007-rules-and-limits.md, "FCM errors and what the sender does").
public struct RetryPolicy: Sendable, Hashable {
    /// The first backoff; doubles with each attempt.
    public var base: Duration = .seconds(1)
    /// The longest backoff.
    public var cap: Duration = .seconds(900)
    /// `QUOTA_EXCEEDED` (429) waits at least this long: FCM asks for back-off starting at a minute.
    public var quotaMinimum: Duration = .seconds(60)
    /// Multiplies every delay, `Retry-After` included: 1 (in-process tests shrink time with it; no
    /// command-line option sets it).
    package var timeScale: Double = 1

    public init() {}

    /// Exponential backoff with jitter for the `attempt`-th try (1-based): a random delay between half
    /// and all of `min(cap, base·2^(attempt-1))`, so senders that failed together spread out.
    package func backoff(attempt: Int, using random: inout some RandomNumberGenerator) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let ceiling = min(base.seconds * Double(1 << exponent), cap.seconds)
        let jittered = ceiling * Double.random(in: 0.5...1.0, using: &random)
        return .seconds(jittered * timeScale)
    }

    /// A server-given delay, scaled.
    package func scaled(_ delay: Duration) -> Duration { .seconds(delay.seconds * timeScale) }
}
