import DigestCore
import DigestImages
import DigestStore
import Foundation

/// `digest queue prune` and `digest run --retain`: the outbox's settled messages and old picks, then,
/// with an attachments directory, the files no live message links to (`docs/001-outbox-semantics.md`,
/// "Retention").
struct RetentionJob {
    var retention: OutboxRetention
    /// `--attachments`: the directory to sweep (nil: rows only).
    var attachments: String?
    /// Seconds a file is kept after its last modification, whatever links it.
    var grace: Int64 = AttachmentSweep.Configuration.defaultGrace

    /// The retention of `--older-than` / `--retain` (`30d`, `8w`, …): one line naming the minimum when
    /// it is shorter.
    static func retention(_ text: String, option: String, batchSize: Int = OutboxRetention.defaultBatchSize, dryRun: Bool = false) throws
        -> OutboxRetention
    {
        guard let age = OutboxRetention.parse(text) else {
            throw CommandError("\(option) '\(text)' is not a duration like 30d or 8w")
        }
        do {
            return try OutboxRetention(age: age, batchSize: batchSize, dryRun: dryRun)
        } catch {
            throw CommandError("\(option) \(text) \(error.reason)")
        }
    }

    /// Prunes at `now` (Unix seconds): rows first, then the files.
    func run(on database: any DigestDatabase, now: Int64) async throws -> RetentionReport {
        let rows = try await database.prune(retention, now: now)
        var report = RetentionReport(
            dryRun: retention.dryRun, olderThan: OutboxRetention.describe(retention.age),
            cutoff: Timestamp.format(retention.cutoff(now: now)), picksBefore: retention.firstKeptPicksWeek(now: now).description,
            messages: rows.messages, picks: rows.picks, attachments: nil)
        if let attachments {
            let directory = URL(fileURLWithPath: attachments, isDirectory: true)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw CommandError("--attachments \(attachments): no such directory")
            }
            var configuration = AttachmentSweep.Configuration(directory: directory)
            configuration.grace = grace
            configuration.dryRun = retention.dryRun
            let linked = AttachmentSweep.linkedNames(try await database.liveImageURLs(now: now))
            report.attachments = try await AttachmentSweep(configuration: configuration).sweep(keeping: linked, now: now)
        }
        return report
    }
}

/// What a prune did (or with `--dry-run` would do): the summary line and `--json`.
struct RetentionReport: Codable, Sendable {
    var dryRun: Bool
    /// The retention, `56d`.
    var olderThan: String
    /// Messages settled before this instant went.
    var cutoff: String
    /// Picks of the weeks before this one went.
    var picksBefore: String
    /// Messages by state.
    var messages: [String: Int]
    /// `digest_picks` rows.
    var picks: Int
    /// The attachments sweep (nil without `--attachments`).
    var attachments: AttachmentSweep.Result?

    /// `pruned 1,204 messages (sent 1,100, dead 64, expired 40) settled before 2026-10-05T12:00:00Z; …`.
    var line: String {
        let verb = dryRun ? "would prune" : "pruned"
        let total = messages.values.reduce(0, +)
        let states = ["sent", "dead", "expired"].map { "\($0) \(messages[$0] ?? 0)" }.joined(separator: ", ")
        var parts = [
            "\(verb) \(total) message\(total == 1 ? "" : "s") (\(states)) settled before \(cutoff)",
            "\(picks) picks row\(picks == 1 ? "" : "s") of weeks before \(picksBefore)",
        ]
        if let attachments {
            let bytes = Self.describe(bytes: attachments.bytes)
            parts.append(
                "\(attachments.files) attachment file\(attachments.files == 1 ? "" : "s") (\(bytes)\(dryRun ? " to free" : " freed")), \(attachments.memoEntries) URL memo entr\(attachments.memoEntries == 1 ? "y" : "ies"); kept \(attachments.linked) linked, \(attachments.recent) recent"
            )
        } else {
            parts.append("attachments not swept (no --attachments)")
        }
        return parts.joined(separator: "; ")
    }

    /// `812 B`, `3.4 kB`, `12.0 MB`, `1.2 GB` (powers of 1,000).
    static func describe(bytes: Int64) -> String {
        guard bytes >= 1000 else { return "\(bytes) B" }
        var value = Double(bytes) / 1000
        for unit in ["kB", "MB", "GB"] {
            if value < 1000 || unit == "GB" { return String(format: "%.1f", value) + " " + unit }
            value /= 1000
        }
        return "\(bytes) B"
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }
}
