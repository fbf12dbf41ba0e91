import ArgumentParser
import Foundation

/// `digest-bench report`: reads what scripts/bench.sh left in its output folder and writes the
/// "Weekly run on SQLite" section of BENCHMARKS.md (medians, ratios, peak memory, the targets).
struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarize a bench output folder into BENCHMARKS.md (between its bench markers).")

    @Option(help: "The bench output folder (one users-N/ folder per size).")
    var dir: String = "bench-out"

    @Option(help: "The Markdown file to write; text outside the markers is kept.")
    var out: String = "BENCHMARKS.md"

    @Option(help: "The command that produced the figures.")
    var command: String = "make bench"

    @Option(help: "The Swift compiler version line.")
    var swift: String = ""

    @Option(help: "The commit measured (and whether the tree had changes).")
    var commit: String = ""

    @Option(help: "The nice value the timed programs ran at.")
    var nice: Int = 0

    /// One run + reference pair.
    struct Pair {
        var iteration: Int
        var wallSeconds: Double
        var cpuPercent: Int
        var userSeconds: Double
        var systemSeconds: Double
        var peakRSSKiB: Int
        var runSeconds: Double
        var users: Int
        var messages: Int
        var enqueued: Int
        var referenceRows: Int
        var referenceSeconds: Double
        /// Moving what the run left in the WAL into the file, timed right after the run.
        var checkpointSeconds: Double
        var walBytes: Int
        /// Cores other processes used: just before the run, on average during it, before the reference.
        var othersBefore: String
        var othersDuring: String
        var othersBeforeReference: String

        var usersPerSecond: Double { Double(users) / wallSeconds }
        /// Users per second if the run had both cores to itself (users ÷ (CPU seconds ÷ 2)).
        var usersPerCPUPair: Double { Double(users) / ((userSeconds + systemSeconds) / 2) }
        var ratio: Double { wallSeconds / referenceSeconds }
        var ratioWithCheckpoint: Double { (wallSeconds + checkpointSeconds) / referenceSeconds }
    }

    struct Size {
        var users: Int
        var reads: Int
        var devices: Int
        var generateSeconds: Double
        var databaseBytes: Int
        var pairs: [Pair]
    }

    static let begin = "<!-- bench:begin: written by `make bench` (scripts/bench.sh); edit outside these markers -->"
    static let end = "<!-- bench:end -->"

    func run() throws {
        let sizes = try loadSizes()
        guard !sizes.isEmpty else { throw ValidationError("no results under \(dir)/users-*/") }
        let section = render(sizes)
        var text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? "# Benchmarks\n\n\(Self.begin)\n\(Self.end)\n"
        if let start = text.range(of: Self.begin), let stop = text.range(of: Self.end, range: start.upperBound..<text.endIndex) {
            text.replaceSubrange(start.lowerBound..<stop.upperBound, with: "\(Self.begin)\n\(section)\(Self.end)")
        } else {
            text += "\n\(Self.begin)\n\(section)\(Self.end)\n"
        }
        try text.write(toFile: out, atomically: true, encoding: .utf8)
        print(section)
    }

    // MARK: Reading the output folder

    func loadSizes() throws -> [Size] {
        let fm = FileManager.default
        let folders = (try? fm.contentsOfDirectory(atPath: dir)) ?? []
        var sizes: [Size] = []
        for folder in folders where folder.hasPrefix("users-") {
            let path = "\(dir)/\(folder)"
            guard let generated = json("\(path)/generate.json") else { continue }
            var pairs: [Pair] = []
            for iteration in 1...100 {
                guard let time = try? String(contentsOfFile: "\(path)/run-\(iteration).time", encoding: .utf8),
                    let summary = json("\(path)/run-\(iteration).json"),
                    let reference = json("\(path)/reference-\(iteration).json")
                else { continue }
                let thisRun = summary["thisRun"] as? [String: Any] ?? [:]
                let checkpoint = json("\(path)/checkpoint-\(iteration).json") ?? [:]
                let others = ((try? String(contentsOfFile: "\(path)/others-\(iteration).txt", encoding: .utf8)) ?? "")
                    .split(whereSeparator: \.isWhitespace).map(String.init)
                let othersReference = ((try? String(contentsOfFile: "\(path)/reference-others-\(iteration).txt", encoding: .utf8)) ?? "?")
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                pairs.append(
                    Pair(
                        iteration: iteration,
                        wallSeconds: Self.wallSeconds(Self.field(time, "Elapsed (wall clock) time (h:mm:ss or m:ss)")),
                        cpuPercent: Int(Self.field(time, "Percent of CPU this job got").dropLast()) ?? 0,
                        userSeconds: Double(Self.field(time, "User time (seconds)")) ?? 0,
                        systemSeconds: Double(Self.field(time, "System time (seconds)")) ?? 0,
                        peakRSSKiB: Int(Self.field(time, "Maximum resident set size (kbytes)")) ?? 0,
                        runSeconds: number(summary["seconds"]),
                        users: Int(number(thisRun["users"])), messages: Int(number(thisRun["messages"])),
                        enqueued: Int(number(thisRun["enqueued"])),
                        referenceRows: Int(number(reference["rows"])), referenceSeconds: number(reference["seconds"]),
                        checkpointSeconds: number(checkpoint["seconds"]), walBytes: Int(number(checkpoint["walBytes"])),
                        othersBefore: others.first ?? "?", othersDuring: others.dropFirst().first ?? "?",
                        othersBeforeReference: othersReference))
            }
            sizes.append(
                Size(
                    users: Int(number(generated["users"])), reads: Int(number(generated["reads"])),
                    devices: Int(number(generated["devices"])), generateSeconds: number(generated["seconds"]),
                    databaseBytes: Int(number(generated["bytes"])), pairs: pairs))
        }
        return sizes.sorted { $0.users < $1.users }
    }

    func json(_ path: String) -> [String: Any]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    func number(_ value: Any?) -> Double { (value as? NSNumber)?.doubleValue ?? 0 }

    /// The value after `name:` in `/usr/bin/time -v` output.
    static func field(_ text: String, _ name: String) -> String {
        for line in text.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix(name + ":") {
                return String(trimmed.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces)
            }
        }
        return ""
    }

    /// `1:02:03`, `2:03.45` or `3.2` in seconds.
    static func wallSeconds(_ text: String) -> Double {
        text.split(separator: ":").reduce(0) { $0 * 60 + (Double($1) ?? 0) }
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    // MARK: Writing the section

    func render(_ sizes: [Size]) -> String {
        func f(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
        func n(_ value: Double) -> String {
            let formatter = NumberFormatter()
            formatter.numberStyle = .decimal
            formatter.groupingSeparator = ","
            formatter.maximumFractionDigits = 0
            return formatter.string(from: NSNumber(value: value.rounded())) ?? "\(Int(value))"
        }
        func mb(_ kib: Double) -> String { f(kib / 1024, 0) }
        func median(_ pairs: [Pair], _ value: (Pair) -> Double) -> Double { Self.median(pairs.map(value)) }
        // When the measurements were taken: the newest result file (the report may be rewritten later).
        let date = ISO8601DateFormatter().string(from: measuredAt() ?? Date())
        var s = "## Weekly run on SQLite\n\n"
        s += "Produced by `\(command)` (scripts/bench.sh), measured on \(date)"
        if !commit.isEmpty { s += ", at commit \(commit)" }
        s += ".\n\n"
        s += "Machine: \(ProcessInfo.processInfo.activeProcessorCount) cores (nproc), \(Self.cpuModel()), "
        s += "\(Self.memory()), Linux \(Self.kernel())"
        if !swift.isEmpty { s += ", \(swift)" }
        s += ", release builds.\n\n"
        s += """
            Method: `digest-bench generate` writes N users (1–3 devices each, ~170-byte FCM tokens, locales \
            en/pl/ru/zh-Hans and variants, 13 time zones), 800 articles with their languages and 20 reads per user \
            over the week and the three before it, and the two previous weeks' digests (outbox rows and their \
            picks), with the project's schema (not timed). Each pair then copies that file and runs \
            `/usr/bin/time -v .build/release/digest run --db FILE --week 2026-W46 --send-at now --progress-interval 10 \
            --report FILE.json` (wall time and peak RSS of the whole process; the binary is a copy taken right \
            after the build, so a concurrent rebuild cannot swap it); then `digest-bench checkpoint` times \
            moving what the run left in the WAL into the file; then `digest-bench reference` inserts the same \
            number of rows with the same byte sizes (the run's dedupe keys, user ids and payloads of the same \
            lengths) into an identical, empty `digest_outbox` with one prepared statement, 2000 rows per \
            transaction, WAL and `synchronous = NORMAL` as in the run, timing only the inserts, commits and the \
            closing checkpoint. users/s = users ÷ wall time of `digest run`; ratio = run ÷ reference of the same \
            pair. Figures are medians over the pairs. The machine is shared: the timed programs ran in a session \
            of their own whose scheduling group had nice \(nice), and the cores other processes used before and \
            during each run are in the last table.


            """
        s += "| users | pairs | digest run, s | users/s | deferred WAL checkpoint, s | reference, s (rows) "
        s += "| ratio run/reference | ratio incl. checkpoint | peak RSS, MB | users/s if both cores were its own |\n"
        s += "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        let measured = sizes.filter { !$0.pairs.isEmpty }
        for size in measured {
            let p = size.pairs
            let rss = p.map { Double($0.peakRSSKiB) }
            s += "| \(n(Double(size.users))) | \(p.count) | \(f(median(p) { $0.wallSeconds })) "
            s += "| \(n(median(p) { $0.usersPerSecond })) | \(f(median(p) { $0.checkpointSeconds }, 2)) "
            s += "| \(f(median(p) { $0.referenceSeconds })) (\(n(median(p) { Double($0.referenceRows) }))) "
            s += "| \(f(median(p) { $0.ratio }, 2)) | \(f(median(p) { $0.ratioWithCheckpoint }, 2)) "
            s += "| \(mb(Self.median(rss))) (max \(mb(rss.max() ?? 0))) | \(n(median(p) { $0.usersPerCPUPair })) |\n"
        }

        // The targets.
        let small = measured.first { $0.users == 100_000 }
        let large = measured.first { $0.users == 1_000_000 }
        s += "\nTargets (from the issue), judged on the medians above:\n\n"
        s += "| target | measured | verdict |\n|---|---|---|\n"
        let rates = measured.map { "\(n(Double($0.users))): \(n(median($0.pairs) { $0.usersPerSecond })) users/s" }
        let ratesMet = !measured.isEmpty && measured.allSatisfy { median($0.pairs) { $0.usersPerSecond } >= 20_000 }
        s += "| at least 20,000 users/s | \(rates.joined(separator: "; ")) | \(ratesMet ? "met" : "**missed**") |\n"
        let ratios = measured.map {
            "\(n(Double($0.users))): \(f(median($0.pairs) { $0.ratio }, 2))× (\(f(median($0.pairs) { $0.ratioWithCheckpoint }, 2))× with the deferred checkpoint)"
        }
        let ratiosMet = !measured.isEmpty
            && measured.allSatisfy { median($0.pairs) { $0.ratio } <= 2 && median($0.pairs) { $0.ratioWithCheckpoint } <= 2 }
        s += "| total time at most 2× the reference | \(ratios.joined(separator: "; ")) | \(ratiosMet ? "met" : "**missed**") |\n"
        let peaks = measured.map { "\(n(Double($0.users))): \(mb(Double($0.pairs.map(\.peakRSSKiB).max() ?? 0))) MB" }
        let peaksMet = !measured.isEmpty && measured.allSatisfy { ($0.pairs.map(\.peakRSSKiB).max() ?? 0) < 500 * 1024 }
        s += "| peak memory under 500 MB (highest pair) | \(peaks.joined(separator: "; ")) | \(peaksMet ? "met" : "**missed**") |\n"
        if let small, let large {
            let a = median(small.pairs) { Double($0.peakRSSKiB) }
            let b = median(large.pairs) { Double($0.peakRSSKiB) }
            s += "| no more memory at 1M users than at 100k | 100k: \(mb(a)) MB; 1M: \(mb(b)) MB "
            s += "(\(f(b - a >= 0 ? (b - a) / 1024 : 0, 0)) MB, \(f((b / a - 1) * 100, 0))% more) | \(b <= a ? "met" : "**missed**") |\n"
        } else {
            s += "| no more memory at 1M users than at 100k | needs both sizes | not measured |\n"
        }

        s += "\nEvery pair (other processes' CPU, in cores: over 5 s just before the run, on average during it, "
        s += "and just before the reference):\n\n"
        s += "| users | pair | run wall, s | run's own timer, s | CPU | user + sys, s | peak RSS, MB | users/s "
        s += "| messages | WAL left, MB | checkpoint, s | reference, s | ratio | others before / during / ref |\n"
        s += "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
        for size in measured {
            for p in size.pairs {
                s += "| \(n(Double(size.users))) | \(p.iteration) | \(f(p.wallSeconds, 2)) | \(f(p.runSeconds, 2)) | \(p.cpuPercent)% "
                s += "| \(f(p.userSeconds + p.systemSeconds, 1)) | \(mb(Double(p.peakRSSKiB))) | \(n(p.usersPerSecond)) "
                s += "| \(n(Double(p.enqueued))) | \(mb(Double(p.walBytes) / 1024)) | \(f(p.checkpointSeconds, 2)) "
                s += "| \(f(p.referenceSeconds, 2)) | \(f(p.ratio, 2)) "
                s += "| \(p.othersBefore) / \(p.othersDuring) / \(p.othersBeforeReference) |\n"
            }
        }
        s += "\nGenerated data (not timed): "
        s += sizes.map { size in
            "\(n(Double(size.users))) users, \(n(Double(size.devices))) devices, \(n(Double(size.reads))) reads in "
                + "\(f(size.generateSeconds)) s (\(mb(Double(size.databaseBytes) / 1024)) MB file)"
        }.joined(separator: "; ")
        s += ". Raw output (time -v, run reports, per-thread CPU and WAL size every 10 s): `bench-out/`.\n\n"
        return s
    }

    /// The modification time of the newest file in the users-N folders.
    func measuredAt() -> Date? {
        let fm = FileManager.default
        var newest: Date?
        for folder in (try? fm.contentsOfDirectory(atPath: dir)) ?? [] where folder.hasPrefix("users-") {
            for file in (try? fm.contentsOfDirectory(atPath: "\(dir)/\(folder)")) ?? [] where file.hasSuffix(".json") {
                if let date = (try? fm.attributesOfItem(atPath: "\(dir)/\(folder)/\(file)"))?[.modificationDate] as? Date,
                    date > (newest ?? .distantPast)
                {
                    newest = date
                }
            }
        }
        return newest
    }

    static func cpuModel() -> String {
        let text = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { $0.split(separator: ":", maxSplits: 1).last!.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
    }

    static func memory() -> String {
        String(format: "%.0f GiB RAM", Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824)
    }

    static func kernel() -> String {
        ((try? String(contentsOfFile: "/proc/sys/kernel/osrelease", encoding: .utf8)) ?? "?")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
