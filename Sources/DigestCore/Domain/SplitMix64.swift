/// A small, fast, seedable generator (SplitMix64): the same seed gives the same sequence on every
/// machine (the demo data set, the benchmark generator, the sender's backoff jitter, the tests' mutation loops).
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    package mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }

    package mutating func next(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + next(below: range.count)
    }
}
