/// Spreads sends evenly to at most `perMinute` a minute, allowing a burst of `burst` after a pause.
/// Pure: the caller passes the time and sleeps for the returned delay.
struct RatePacer: Sendable {
    let interval: Duration
    let burst: Int
    private var next: ContinuousClock.Instant?

    init(perMinute: Int, burst: Int = 1) {
        interval = .seconds(60.0 / Double(max(1, perMinute)))
        self.burst = max(1, burst)
    }

    /// Reserves the next slot; returns how long to wait before sending.
    mutating func reserve(now: ContinuousClock.Instant) -> Duration {
        // Unused time accrues as credit for at most `burst` sends.
        let earliest = now - interval * (burst - 1)
        let slot = max(next ?? earliest, earliest)
        next = slot + interval
        return max(.zero, slot - now)
    }
}
