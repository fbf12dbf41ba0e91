import Foundation  // sqrt, erfc

/// The statistics of `digest report`: a proportion's 95% Wilson score interval, the interval of a
/// difference of two proportions from theirs (Newcombe's), and the two-sided pooled two-proportion
/// z-test of a split week's arms.
package enum OpenRateStatistics {
    /// The standard normal quantile of 0.975: a 95% two-sided interval.
    package static let z95 = 1.959963984540054

    /// The Wilson score interval of `successes` out of `trials` at `z` (95% by default); `nil` when
    /// there were no trials. Unlike the normal approximation it stays inside [0, 1] and is not empty at
    /// 0 or `trials` successes.
    package static func wilson(successes: Int, trials: Int, z: Double = z95) -> (low: Double, high: Double)? {
        guard trials > 0 else { return nil }
        let n = Double(trials), p = Double(successes) / n, z2 = z * z
        let denominator = 1 + z2 / n
        let center = (p + z2 / (2 * n)) / denominator
        let half = z / denominator * (p * (1 - p) / n + z2 / (4 * n * n)).squareRoot()
        return (max(0, center - half), min(1, center + half))
    }

    /// The two-sided pooled two-proportion z-test of `x1/n1` against `x2/n2`: the z statistic and
    /// its p-value, `erfc(|z| / √2)`. `nil` when an arm has no trials; z 0 and p-value 1 when the
    /// pooled proportion is 0 or 1 (the arms cannot differ).
    package static func twoProportionTest(x1: Int, n1: Int, x2: Int, n2: Int) -> (z: Double, pValue: Double)? {
        guard n1 > 0, n2 > 0 else { return nil }
        let p1 = Double(x1) / Double(n1), p2 = Double(x2) / Double(n2)
        let pooled = Double(x1 + x2) / Double(n1 + n2)
        let standardError = (pooled * (1 - pooled) * (1 / Double(n1) + 1 / Double(n2))).squareRoot()
        guard standardError > 0 else { return (0, 1) }
        let z = (p1 - p2) / standardError
        return (z, erfc(abs(z) / 2.0.squareRoot()))
    }

    /// The 95% interval of `x1/n1 − x2/n2` from the two Wilson intervals (Newcombe 1998, method 10,
    /// the "hybrid score" interval): it stays inside [−1, 1] and keeps its coverage near 0 and 1,
    /// where the normal approximation's does not. `nil` when a group has no trials.
    package static func newcombe(x1: Int, n1: Int, x2: Int, n2: Int, z: Double = z95) -> (low: Double, high: Double)? {
        guard let (l1, u1) = wilson(successes: x1, trials: n1, z: z), let (l2, u2) = wilson(successes: x2, trials: n2, z: z)
        else { return nil }
        let p1 = Double(x1) / Double(n1), p2 = Double(x2) / Double(n2)
        let difference = p1 - p2
        let below = ((p1 - l1) * (p1 - l1) + (u2 - p2) * (u2 - p2)).squareRoot()
        let above = ((u1 - p1) * (u1 - p1) + (p2 - l2) * (p2 - l2)).squareRoot()
        return (difference - below, difference + above)
    }
}
