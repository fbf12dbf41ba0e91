/// The faults every fake service draws at random for each request, the same way: a delay, and shares
/// of requests dropped without an answer or answered 429, 500 or 503. A fake's `Faults` holds them
/// beside its own (``FakeFaults``) and reads and sets them by name (`faults.dropRate`).
package struct RandomFaults: Sendable, Hashable, Codable {
    /// Each answer waits a random time in this range, milliseconds (scheduled on the event loop).
    package var minDelayMilliseconds = 0
    package var maxDelayMilliseconds = 0
    /// Share of requests dropped without an answer (the connection closed, or over HTTP/2 the stream
    /// reset where the fake does that).
    package var dropRate = 0.0
    /// Share answered 429.
    package var tooManyRequestsRate = 0.0
    /// Share answered 500.
    package var internalRate = 0.0
    /// Share answered 503.
    package var unavailableRate = 0.0

    package init() {}

    /// Answers about `latencyMilliseconds` late, with a jitter of a tenth either way (the fakes'
    /// programs' `--delay-ms`), and the shares given.
    package init(latencyMilliseconds: Int, dropRate: Double = 0, tooManyRequestsRate: Double = 0, internalRate: Double = 0, unavailableRate: Double = 0) {
        minDelayMilliseconds = latencyMilliseconds - latencyMilliseconds / 10
        maxDelayMilliseconds = latencyMilliseconds + latencyMilliseconds / 10
        self.dropRate = dropRate
        self.tooManyRequestsRate = tooManyRequestsRate
        self.internalRate = internalRate
        self.unavailableRate = unavailableRate
    }

    /// What a request drew.
    enum Fault {
        case drop, tooManyRequests, internalError, unavailable
    }

    /// A delay drawn from the range: its minimum when the range is empty, never below 0.
    func delay(using random: inout some RandomNumberGenerator) -> Int {
        guard maxDelayMilliseconds > minDelayMilliseconds else { return max(0, minDelayMilliseconds) }
        return Int.random(in: minDelayMilliseconds...maxDelayMilliseconds, using: &random)
    }

    /// The fault `roll` (drawn in 0..<1) falls on, the shares laid end to end in the order drop, 429,
    /// 500, 503; nil past them all.
    func fault(at roll: Double) -> Fault? {
        var end = 0.0
        for (share, fault) in [(dropRate, Fault.drop), (tooManyRequestsRate, .tooManyRequests), (internalRate, .internalError), (unavailableRate, .unavailable)] {
            end += share
            if roll < end { return fault }
        }
        return nil
    }
}

/// A fake's faults: its own, and the ``RandomFaults`` every fake draws alike, read and set through it
/// by name (`faults.dropRate`).
package protocol FakeFaults {
    var random: RandomFaults { get set }
}

extension FakeFaults {
    package subscript<Value>(dynamicMember field: WritableKeyPath<RandomFaults, Value>) -> Value {
        get { random[keyPath: field] }
        set { random[keyPath: field] = newValue }
    }
}
