public import DigestCore
import DigestStore

/// Where a run stands, after each committed batch.
public struct RunProgress: Sendable {
    public var week: ISOWeek
    public var done: Int
    public var total: Int
    public var elapsedSeconds: Double
    public var counters: RunCounters

    /// Users per second so far.
    public var rate: Double { elapsedSeconds > 0 ? Double(done) / elapsedSeconds : 0 }

    /// Seconds left at the current rate.
    public var remainingSeconds: Double? {
        rate > 0 ? Double(max(0, total - done)) / rate : nil
    }

    public var fraction: Double { total > 0 ? min(1, Double(done) / Double(total)) : 1 }
}

struct ProgressTracker {
    let total: Int
    let started: ContinuousClock.Instant
    var done = 0

    init(total: Int, started: ContinuousClock.Instant) {
        self.total = total
        self.started = started
    }

    mutating func advance(by users: Int) { done += users }

    func snapshot(week: ISOWeek, counters: RunCounters) -> RunProgress {
        let elapsed = started.duration(to: .now)
        let seconds = elapsed.seconds
        return RunProgress(week: week, done: done, total: max(total, done), elapsedSeconds: seconds, counters: counters)
    }
}
