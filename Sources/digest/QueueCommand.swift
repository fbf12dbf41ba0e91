import ArgumentParser
import DigestCore
import DigestStore
import Foundation

struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue", abstract: "Look at the outbox.", subcommands: [Stats.self, Peek.self, RequeueDead.self, Prune.self])

    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Messages by state, platform, provider, variant and week.")

        @OptionGroup var database: DatabaseOptions
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let stats = try await database.withStore { try await $0.outboxStats(now: Int64(Date().timeIntervalSince1970)) }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                print(String(decoding: try encoder.encode(stats), as: UTF8.self))
                return
            }
            func list(_ values: [String: Int]) -> String {
                values.isEmpty ? "none" : values.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            }
            print("messages: \(stats.total) (\(stats.due) ready and due now)")
            print("by state: \(list(stats.byState))")
            print("by platform: \(list(stats.byPlatform))")
            print("by provider: \(list(stats.byProvider))")
            print("by variant: \(list(stats.byVariant))")
            print("by week: \(list(stats.byWeek))")
        }
    }

    struct Peek: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the first messages as JSON lines (device tokens, endpoints and Web Push keys masked).")

        @OptionGroup var database: DatabaseOptions
        @Option(help: "How many.") var limit = 5
        @Option(help: "Only this state (ready, leased, sent, dead, expired).") var state: String?

        @Flag(help: "Print the whole message, target and headers, token, endpoint and Web Push keys included.") var showTokens = false

        func validate() throws {
            let states = OutboxDelivery.State.allCases.map(\.rawValue)
            if let state, !states.contains(state) {
                throw ValidationError("unknown state '\(state)': one of \(states.joined(separator: ", "))")
            }
        }

        func run() async throws {
            let state = state.flatMap(OutboxDelivery.State.init(rawValue:))
            for row in try await database.withStore({ try await $0.peek(limit: limit, state: state) }) {
                var writer = JSONWriter()
                writer.beginObject()
                writer.field("id", Int(row.id))
                writer.field("dedupe_key", row.dedupeKey)
                writer.field("week", row.week)
                writer.field("user_id", row.userID)
                writer.field("platform", row.platform.rawValue)
                writer.field("provider", row.provider.rawValue)
                writer.field("target", showTokens ? row.target : Device.masked(row.target))
                writer.field("variant", row.variant.rawValue)
                writer.field("state", row.state.rawValue)
                writer.field("available_at", Timestamp.format(row.availableAt))
                writer.field("attempts", row.attempts)
                if let id = row.messageID { writer.field("message_id", id) }
                if let locale = row.locale { writer.field("locale", locale) }
                writer.key("message")
                writer.raw(Array((showTokens ? row.message : Self.maskToken(row.message)).utf8))
                if let headers = row.headers {
                    writer.key("headers")
                    writer.raw(Array((showTokens ? headers : Self.maskKeys(headers, provider: row.provider)).utf8))
                }
                writer.key("report")
                writer.raw(Array(row.report.utf8))
                writer.endObject()
                print(writer.string)
            }
        }

        /// A Web Push row's headers with the subscription's keys (`p256dh`, `auth`) shown as `…`: they
        /// are the subscriber's secrets, printed only with `--show-tokens`. Other providers' headers
        /// hold none; a row that cannot be read back is shown as `{}`.
        static func maskKeys(_ headers: String, provider: Provider) -> String {
            guard provider == .webpush else { return headers }
            guard var read = try? WebPushHeaders(json: Array(headers.utf8)) else { return "{}" }
            (read.p256dh, read.auth) = ("…", "…")
            return read.json
        }

        /// Replaces the token's value with its last four characters.
        static func maskToken(_ message: String) -> String {
            guard let start = message.range(of: "\"token\":\"") else { return message }
            guard let end = message[start.upperBound...].firstIndex(of: "\"") else { return message }
            let token = message[start.upperBound..<end]
            return message.replacingCharacters(in: start.upperBound..<end, with: "…" + token.suffix(4))
        }
    }

    struct RequeueDead: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "requeue-dead",
            abstract: "Make dead messages ready again, due now, with their attempts reset.",
            discussion: """
                Their last_error stays for the record. Narrow it with --reason (a prefix of last_error, \
                such as UNAVAILABLE or INVALID_ARGUMENT) and --week.
                """)

        @OptionGroup var database: DatabaseOptions
        @Option(help: "Only messages whose last error starts with this (e.g. UNAVAILABLE).") var reason: String?
        @Option(help: "Only messages of this ISO week (e.g. 2026-W47).") var week: String?

        func run() async throws {
            let count = try await database.withStore {
                try await Self.requeue($0, reason: reason, week: week, now: Int64(Date().timeIntervalSince1970))
            }
            print("requeued \(count) dead message\(count == 1 ? "" : "s")")
        }

        static func requeue(_ database: some DigestDatabase, reason: String?, week: String?, now: Int64) async throws -> Int {
            try await database.withOutboxConsumer { try await $0.requeueDead(reasonPrefix: reason, week: week, now: now) }
        }
    }

    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete settled messages, old weeks' picks and the attachment files no message needs.",
            discussion: """
                Deletes sent, dead and expired messages settled longer ago than --older-than (at least 28d: \
                the messages' 7-day TTL plus the digest's week and the two weeks whose picks it does not \
                repeat), and the picks of the weeks no digest still to come reads. With --attachments, \
                deletes the rendition files that no message within its TTL links to and that are older \
                than --grace, and the URL memo entries past their lifetime or naming files that are gone. \
                Deletes in batches of --batch-size rows, each its own transaction; safe beside runs and \
                senders. Run bookkeeping (digest_runs, chunks, zone cursors) is kept.
                """)

        @OptionGroup var database: DatabaseOptions
        @Option(help: "Delete messages settled longer ago than this: 30d, 8w, … (at least 28d).") var olderThan = "8w"
        @Option(help: "The attachments directory (the run's --attachments): also delete the files no live message links to.")
        var attachments: String?
        @Option(help: "Keep every attachment file modified within this long, linked or not: 1d, 12h, ….") var grace = "1d"
        @Option(help: "Rows deleted per transaction.") var batchSize = OutboxRetention.defaultBatchSize
        @Option(help: "The instant to prune at, RFC 3339 (default: now): for tests and replays.") var asOf: String?
        @Flag(help: "Count what would go; delete nothing.") var dryRun = false
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let now: Int64
            if let asOf {
                guard let instant = Timestamp.parse(asOf) else {
                    throw CommandError("--as-of '\(asOf)' is not an RFC 3339 instant like 2026-11-23T05:00:00Z")
                }
                now = instant
            } else {
                now = Int64(Date().timeIntervalSince1970)
            }
            guard batchSize > 0 else { throw CommandError("--batch-size must be positive") }
            guard let grace = OutboxRetention.parse(grace) else { throw CommandError("--grace '\(grace)' is not a duration like 1d or 12h") }
            var job = RetentionJob(
                retention: try RetentionJob.retention(olderThan, option: "--older-than", batchSize: batchSize, dryRun: dryRun),
                attachments: attachments)
            job.grace = grace
            let report = try await database.withStore(existing: true) { try await job.run(on: $0, now: now) }
            print(json ? report.json : report.line)
        }
    }
}
