import ArgumentParser
import DigestCore
import DigestEvents
import DigestStore
import Foundation

/// `digest readers`: one reader as the store holds them, and their preferences by hand.
struct ReadersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "readers", abstract: "Readers: what the store holds about them, their preferences, their data exported or forgotten.", subcommands: [Show.self, SetPreferences.self, Export.self, Forget.self])

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A reader's preferences, devices (tokens masked), last 4 digests and preference changes.")

        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The reader's id.") var id: String
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let id = self.id
            let shown = try await database.withStore(existing: true) { store in try await ReaderView.load(id, from: store) }
            guard let shown else { throw CommandError("no reader '\(id)' in \(database.displayName)") }
            print(json ? shown.json : shown.text, terminator: json ? "\n" : "")
        }
    }

    struct SetPreferences: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Change a reader's preferences (recorded as source cli).",
            discussion: """
                Only what the options name changes; the rest stays. --every 2 --from 2026-W48: a digest every \
                other week counted from that ISO week (without --from: the week it is stored in, kept while the \
                pace stays). --pause-until DATE: no digest due on that local date or before; --resume ends a \
                pause. --follow/--unfollow and --mute/--unmute take a topic key as articles carry it, and may \
                be repeated; a topic both followed and muted is muted. --off stops the digest, --on starts it \
                again.
                """)

        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The reader's id.") var id: String
        @Option(help: "Weeks between digests: 1, 2 or 4.") var every: Int?
        @Option(help: "The ISO week the pace counts from, like 2026-W48.") var from: String?
        @Option(help: "No digest due on this local date (YYYY-MM-DD) or before it.") var pauseUntil: String?
        @Flag(help: "End a pause.") var resume = false
        @Option(help: "Follow a topic (repeatable).") var follow: [String] = []
        @Option(help: "Stop following a topic (repeatable).") var unfollow: [String] = []
        @Option(help: "Mute a topic (repeatable).") var mute: [String] = []
        @Option(help: "Unmute a topic (repeatable).") var unmute: [String] = []
        @Flag(help: "Stop the digest for this reader.") var off = false
        @Flag(help: "Start the digest again.") var on = false

        func validate() throws {
            if let every, !ReaderPreferences.allowedEvery.contains(every) { throw ValidationError("--every must be 1, 2 or 4") }
            if let from, (try? ISOWeek(parsing: from)) == nil { throw ValidationError("--from '\(from)' is not an ISO week like 2026-W48") }
            if let pauseUntil, CivilDate(parsing: pauseUntil) == nil {
                throw ValidationError("--pause-until '\(pauseUntil)' is not a date like 2026-12-14")
            }
            if pauseUntil != nil && resume { throw ValidationError("--pause-until and --resume cannot go together") }
            if off && on { throw ValidationError("--off and --on cannot go together") }
            for (flag, topics) in [("--follow", follow), ("--unfollow", unfollow), ("--mute", mute), ("--unmute", unmute)] {
                for topic in topics where !ReaderPreferences.isValidTopic(topic) {
                    throw ValidationError(
                        "\(flag) '\(topic)': a topic key is 1 to \(ReaderPreferences.maxTopicLength) characters without control characters")
                }
            }
            let changes = every != nil || from != nil || pauseUntil != nil || resume || off || on
            guard changes || !(follow + unfollow + mute + unmute).isEmpty else {
                throw ValidationError("nothing to change: name at least one preference (see --help)")
            }
        }

        /// `preferences` with this command's changes.
        func applied(to preferences: ReaderPreferences) throws -> ReaderPreferences {
            var result = preferences
            if let every {
                if every != result.every { result.from = nil }
                result.every = every
            }
            if let from { result.from = try ISOWeek(parsing: from) }
            if let pauseUntil { result.pausedUntil = CivilDate(parsing: pauseUntil) }
            if resume { result.pausedUntil = nil }
            for topic in follow where !result.follow.contains(topic) { result.follow.append(topic) }
            result.follow.removeAll { unfollow.contains($0) }
            for topic in mute where !result.mute.contains(topic) { result.mute.append(topic) }
            result.mute.removeAll { unmute.contains($0) }
            if off { result.off = true }
            if on { result.off = false }
            for (name, list) in [("follow", result.follow), ("mute", result.mute)] where list.count > ReaderPreferences.maxTopics {
                throw CommandError("\(name) would hold \(list.count) topics: at most \(ReaderPreferences.maxTopics)")
            }
            return result
        }

        func run() async throws {
            let id = self.id
            let now = Int64(Date().timeIntervalSince1970)
            let outcome: (before: StoredPreferences, after: StoredPreferences)? = try await database.withStore(existing: true) { store in
                // Read, change, write unless another writer came between (then again).
                for _ in 0..<8 {
                    guard let stored = try await store.preferences(of: id) else { return nil }
                    let wanted = try applied(to: stored.preferences)
                    switch try await store.setPreferences(
                        of: id, to: wanted, ifVersion: stored.version, source: .cli, messageID: nil, at: now)
                    {
                    case .stored(let after): return (stored, after)
                    case .noReader: return nil
                    case .managedElsewhere:
                        throw CommandError("the preferences come from the publisher's own view (digest_reader_preferences): change them there")
                    case .versionMoved: continue
                    }
                }
                throw CommandError("the preferences kept changing meanwhile: try again")
            }
            guard let outcome else { throw CommandError("no reader '\(id)' in \(database.displayName)") }
            if outcome.after.version == outcome.before.version {
                print("reader \(id): nothing changed (version \(outcome.after.version))")
            } else {
                print("reader \(id): preferences version \(outcome.before.version) → \(outcome.after.version)")
                print("  before \(outcome.before.preferences.json)")
                print("  after  \(outcome.after.preferences.json)")
            }
            let muted = outcome.after.preferences.follow.filter { outcome.after.preferences.mute.contains($0) }
            if !muted.isEmpty {
                print("note: followed and muted, so muted: \(muted.joined(separator: ", "))")
            }
        }
    }
}

/// What `digest readers show` prints.
struct ReaderView {
    var reader: Reader
    var preferences: StoredPreferences
    var changes: [PreferenceChange]
    /// The latest digests first: a week's messages, one per device.
    var digests: [(week: String, rows: [OutboxRow])]

    /// How many digests `show` lists.
    static let digestCount = 4

    static func load(_ id: String, from store: any DigestDatabase) async throws -> ReaderView? {
        guard let stored = try await store.withHistoryReader({ try await $0.user(id: id) }),
            let preferences = try await store.preferences(of: id)
        else { return nil }
        let changes = try await store.preferenceChanges(of: id, limit: PreferencesAPI.maxChanges) ?? []
        var digests: [(week: String, rows: [OutboxRow])] = []
        for week in try await store.outboxWeeks(userID: id).sorted(by: >).prefix(digestCount) {
            digests.append((week, try await store.outboxRows(week: week, userID: id)))
        }
        return ReaderView(reader: stored.reader, preferences: preferences, changes: changes, digests: digests)
    }

    var text: String {
        var lines: [String] = []
        lines.append("reader \(reader.id) · \(reader.locale) · \(reader.timeZone)")
        let p = preferences.preferences
        lines.append("preferences (version \(preferences.version)):")
        lines.append("  digest: \(p.off ? "off" : "on")")
        lines.append("  every: \(p.every == 1 ? "week" : "\(p.every) weeks")\(p.from.map { " from \($0)" } ?? "")")
        lines.append("  paused until: \(p.pausedUntil?.description ?? "-")")
        lines.append("  follow: \(p.follow.isEmpty ? "-" : p.follow.joined(separator: ", "))")
        lines.append("  mute: \(p.mute.isEmpty ? "-" : p.mute.joined(separator: ", "))")
        if !p.fewer.isEmpty {
            let fewer = p.fewer.map { "\($0.topic) until \(Timestamp.format($0.until))" }
            lines.append("  fewer (a button's press): \(fewer.joined(separator: ", "))")
        }
        lines.append("devices (\(reader.devices.count)):")
        for device in reader.devices {
            lines.append("  \(device.provider.rawValue) \(device.platform.rawValue) \(device.maskedToken)")
        }
        if reader.deadTokens > 0 { lines.append("  + \(reader.deadTokens) with a token the provider called unregistered") }
        lines.append("last digests (\(digests.count)):")
        for digest in digests {
            let variants = Array(Set(digest.rows.map(\.variant.rawValue))).sorted().joined(separator: "/")
            let states = digest.rows.map { "\($0.platform.rawValue) \($0.state.rawValue)" }.joined(separator: ", ")
            lines.append("  \(digest.week) \(variants): \(states)")
        }
        lines.append("preference changes (\(changes.count)):")
        for change in changes {
            let by = change.messageID.map { "\(change.source.rawValue) \($0)" } ?? change.source.rawValue
            lines.append("  \(Timestamp.format(change.at)) \(by): \(change.before.json) → \(change.after.json)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    var json: String {
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("id", reader.id)
        writer.field("locale", reader.locale)
        writer.field("zone", reader.timeZone)
        writer.key("preferences")
        preferences.preferences.write(to: &writer)
        writer.field("version", preferences.version)
        writer.key("devices")
        writer.beginArray()
        for device in reader.devices {
            writer.beginObject()
            writer.field("provider", device.provider.rawValue)
            writer.field("platform", device.platform.rawValue)
            writer.field("token", device.maskedToken)
            writer.endObject()
        }
        writer.endArray()
        writer.key("digests")
        writer.beginArray()
        for digest in digests {
            for row in digest.rows {
                writer.beginObject()
                writer.field("week", row.week)
                writer.field("variant", row.variant.rawValue)
                writer.field("platform", row.platform.rawValue)
                writer.field("state", row.state.rawValue)
                if let id = row.messageID { writer.field("message_id", id) }
                writer.endObject()
            }
        }
        writer.endArray()
        writer.key("preference_changes")
        PreferencesAPI.write(changes, to: &writer)
        writer.endObject()
        return writer.string
    }
}
