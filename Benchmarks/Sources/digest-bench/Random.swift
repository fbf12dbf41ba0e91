import DigestCore
/// The project's seedable generator, so the same seed gives the same database everywhere.
typealias BenchRandom = SplitMix64

extension SplitMix64 {
    mutating func below(_ bound: Int) -> Int { next(below: bound) }

    mutating func inRange(_ range: ClosedRange<Int>) -> Int { next(in: range) }

    /// Uniform in (0, 1].
    mutating func unit() -> Double { (Double(next() >> 11) + 1) / 9_007_199_254_740_992.0 }

    /// `true` with probability `percent` / 100.
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
}

/// Seconds since a start instant, for progress and timing.
struct Stopwatch {
    private let start = ContinuousClock.now

    var seconds: Double {
        let elapsed = start.duration(to: .now)
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
