import DigestCore
/// The project's seedable generator, so the same seed gives the same database everywhere.
typealias BenchRandom = SplitMix64

extension SplitMix64 {
    mutating func below(_ bound: Int) -> Int { next(below: bound) }
}

/// Seconds since a start instant, for progress and timing.
struct Stopwatch {
    private let start = ContinuousClock.now

    var seconds: Double {
        start.duration(to: .now).seconds
    }
}
