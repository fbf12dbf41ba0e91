package import Foundation

extension JSONEncoder {
    /// Sorted keys, so stored JSON (a run's counters) is stable.
    package static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}
