import DigestCore

/// Spreads sends to at most `perMinute` in any minute, FCM's quota window, allowing a burst of
/// `burst` after a pause. Pure: the caller passes the time and waits for the returned delay.
///
/// Each send reserves a slot; slots are `interval` apart and a slot may lie at most
/// `interval·(burst−1)` in the past (the credit a pause leaves). A send happens at its slot or later,
/// so the sends of any minute `[t, t+60 s)` hold slots in `[t − interval·(burst−1), t+60 s)`: at most
/// `60 s / interval + burst − 1` of them. The interval is `60 s / (perMinute − burst + 1)`, which makes
/// that `perMinute`: the burst is paid for by a slightly longer interval, never by a minute over quota.
struct RatePacer<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    let interval: Duration
    let burst: Int
    private var next: Instant?

    init(perMinute: Int, burst: Int = 1) {
        let perMinute = max(1, perMinute)
        self.burst = min(max(1, burst), perMinute)
        // Rounded up to the nanosecond: a shorter interval could let one send too many into a minute.
        let slots = Int64(perMinute - self.burst + 1)
        interval = .nanoseconds((60_000_000_000 + slots - 1) / slots)
    }

    /// Sends a second in the steady state.
    var perSecond: Double { 1 / interval.seconds }

    /// How long from `now` until the next slot may be taken (zero: now).
    func delay(now: Instant) -> Duration {
        max(.zero, now.duration(to: slot(now: now)))
    }

    /// Takes the next slot: call at or after `delay(now:)` has passed.
    mutating func take(now: Instant) {
        next = slot(now: now).advanced(by: interval)
    }

    /// Reserves the next slot; returns how long to wait before sending.
    mutating func reserve(now: Instant) -> Duration {
        let wait = delay(now: now)
        take(now: now)
        return wait
    }

    private func slot(now: Instant) -> Instant {
        // Unused time accrues as credit for at most `burst` sends.
        let earliest = now.advanced(by: .zero - interval * (burst - 1))
        return max(next ?? earliest, earliest)
    }
}
