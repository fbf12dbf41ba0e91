import DigestCore
import DigestRun
import DigestStore
import Foundation
import Synchronization

/// Shows a run's progress on stderr: a redrawn bar on a terminal, plain lines elsewhere (at most one
/// per `interval` seconds, every batch when `interval` is 0).
final class ProgressPrinter: Sendable {
    private let isTerminal: Bool
    private let interval: Double
    private let lastPrinted = Mutex<Double>(-1)

    init(interval: Double) {
        self.isTerminal = isatty(2) == 1
        self.interval = interval
    }

    func report(_ progress: RunProgress) {
        let due = lastPrinted.withLock { last -> Bool in
            let finished = progress.done >= progress.total && progress.total > 0
            guard finished || last < 0 || progress.elapsedSeconds - last >= (isTerminal ? 0.1 : interval) else { return false }
            last = progress.elapsedSeconds
            return true
        }
        guard due else { return }
        let percent = Int(progress.fraction * 100)
        let eta = progress.remainingSeconds.map { String(format: "%.0fs", $0) } ?? "?"
        let text = "\(progress.done)/\(progress.total) users (\(percent)%), \(Int(progress.rate)) users/s, \(progress.counters.enqueued) messages enqueued, ETA \(eta)"
        if isTerminal {
            let width = 24
            let filled = Int(progress.fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            FileHandle.standardError.write(Data("\r\u{1B}[2K[\(bar)] \(text)".utf8))
        } else {
            FileHandle.standardError.write(Data("progress: week \(progress.week): \(text)\n".utf8))
        }
    }

    /// Ends the terminal line.
    func finish() {
        if isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}

/// Writes a line to stderr.
func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
