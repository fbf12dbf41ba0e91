/// SplitMix64: small, fast and seedable, so the same seed gives the same database everywhere.
struct BenchRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    mutating func inRange(_ range: ClosedRange<Int>) -> Int { range.lowerBound + below(range.count) }

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
