import Foundation

/// What a reader chose about their digest: how often, from which week, a pause, topics to follow and
/// to mute, and whether they want it at all (README, "What the reader chooses"; docs/010 for the
/// `users.jsonl` field, docs/009 for the API).
///
/// Every key has a default, and a reader who chose nothing has ``ReaderPreferences/init()``. Topics
/// are keys as articles carry them, compared exactly (no case folding or normalisation); a topic in
/// both lists is muted.
public struct ReaderPreferences: Sendable, Hashable {
    /// Weeks between digests: 1, 2 or 4 (``allowedEvery``).
    public var every: Int
    /// The ISO week the pace counts from (`nil`: none stored; a store fills in the week it stores a
    /// pace in, ``resolvingFrom(stored:currentWeek:)``).
    public var from: ISOWeek?
    /// No digest due on this local date or before it.
    public var pausedUntil: CivilDate?
    /// Topics the first pick comes from whenever one is eligible.
    public var follow: [String]
    /// Topics no pick ever has.
    public var mute: [String]
    /// The reader stopped the digest (what `optedOut` says in `users.jsonl`).
    public var off: Bool
    /// Topics the reader pressed "Fewer like this" on, each until its end (``ReaderAction/fewer``).
    /// Only a press changes them: an import's or the API's object replaces the other keys and leaves
    /// these as stored.
    public var fewer: [FewerTopic] = []

    public init(
        every: Int = 1, from: ISOWeek? = nil, pausedUntil: CivilDate? = nil, follow: [String] = [], mute: [String] = [],
        off: Bool = false
    ) {
        self.every = every
        self.from = from
        self.pausedUntil = pausedUntil
        self.follow = follow
        self.mute = mute
        self.off = off
    }

    /// The paces a reader may choose, in weeks.
    package static let allowedEvery = [1, 2, 4]
    /// At most this many topics in ``follow`` and in ``mute`` each.
    package static let maxTopics = 100
    /// A topic key's length: 1 to this many Unicode characters (code points, as PostgreSQL's
    /// `char_length` counts them).
    package static let maxTopicLength = 64

    /// The topics held back ("fewer") for a digest due at `dueAt` (Unix seconds): those whose press
    /// has not ended by then.
    package func fewerTopics(dueAt: Int64) -> [String] {
        fewer.isEmpty ? [] : fewer.filter { $0.until > dueAt }.map(\.topic)
    }

    /// Whether nothing differs from the defaults.
    package var isDefault: Bool { self == ReaderPreferences() }

    /// Whether `topic` is a valid topic key: 1 to ``maxTopicLength`` code points, none of them a
    /// control character (C0, DEL or C1).
    package static func isValidTopic(_ topic: String) -> Bool {
        let count = topic.unicodeScalars.count
        guard count >= 1, count <= maxTopicLength else { return false }
        return !topic.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }

    /// Whether a digest is due in `week` by the pace: (`week` − ``from``) is divisible by ``every``,
    /// counted in ISO weeks, negative differences included. Always with a pace of 1 or no ``from``.
    package func isDue(in week: ISOWeek) -> Bool {
        guard every > 1, let from else { return true }
        let difference = Self.weeks(from: from, to: week)
        return difference % every == 0
    }

    /// How many weeks a digest covers (stats and picks): ``every``, at least 1.
    package var coveredWeeks: Int { max(1, every) }

    /// Whether the pause holds a digest due on `date` (the reader's local date of its due time).
    package func isPaused(on date: CivilDate) -> Bool {
        guard let pausedUntil else { return false }
        return date <= pausedUntil
    }

    /// Whether an article with `topics` may be picked: none of them muted.
    package func allows(topics: [String]) -> Bool {
        mute.isEmpty || !topics.contains { mute.contains($0) }
    }

    /// Whether an article with `topics` is from a followed (and not muted) topic.
    package func follows(topics: [String]) -> Bool {
        !follow.isEmpty && topics.contains { follow.contains($0) && !mute.contains($0) }
    }

    /// The first muted topic of an article (why a candidate was left out), if any.
    package func mutedTopic(of topics: [String]) -> String? {
        mute.isEmpty ? nil : topics.first { mute.contains($0) }
    }

    /// ISO weeks from `from` to `to` (negative when `to` is earlier).
    package static func weeks(from: ISOWeek, to: ISOWeek) -> Int {
        (to.monday.daysSinceEpoch - from.monday.daysSinceEpoch) / 7
    }

    /// These preferences as a store keeps them: ``from`` as given, else the stored one while the
    /// pace is the same, else `currentWeek` (the week the pace is stored in, by the store's clock)
    /// for a pace over 1 week; `nil` for a weekly pace without one.
    package func resolvingFrom(stored: ReaderPreferences?, currentWeek: ISOWeek) -> ReaderPreferences {
        var resolved = self
        guard resolved.from == nil else { return resolved }
        if let stored, stored.every == every, let storedFrom = stored.from {
            resolved.from = storedFrom
        } else if every > 1 {
            resolved.from = currentWeek
        }
        return resolved
    }

    /// The preferences as JSON with every key, defaults filled in, in a fixed order:
    /// `{"every":1,"from":null,"pausedUntil":null,"follow":[],"mute":[],"off":false}` (what the API
    /// answers and the change history keeps).
    package func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.field("every", every)
        writer.key("from")
        if let from { writer.value(from.description) } else { writer.raw(Array("null".utf8)) }
        writer.key("pausedUntil")
        if let pausedUntil { writer.value(pausedUntil.description) } else { writer.raw(Array("null".utf8)) }
        writer.key("follow")
        writer.beginArray()
        for topic in follow { writer.value(topic) }
        writer.endArray()
        writer.key("mute")
        writer.beginArray()
        for topic in mute { writer.value(topic) }
        writer.endArray()
        writer.key("off")
        writer.value(off)
        // Only while a press holds some: the six keys above are the object a publisher reads and writes.
        if !fewer.isEmpty {
            writer.key("fewer")
            writer.beginArray()
            for entry in fewer {
                writer.beginObject()
                writer.field("topic", entry.topic)
                writer.field("until", Self.rfc3339(entry.until))
                writer.endObject()
            }
            writer.endArray()
        }
        writer.endObject()
    }

    /// `2026-11-23T09:14:03Z`.
    package static func rfc3339(_ instant: Int64) -> String {
        let days = instant >= 0 ? instant / 86_400 : (instant - 86_399) / 86_400
        let seconds = Int(instant - days * 86_400)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(CivilDate(daysSinceEpoch: Int(days)))T\(two(seconds / 3600)):\(two(seconds / 60 % 60)):\(two(seconds % 60))Z"
    }

    /// The instant of ``rfc3339(_:)``'s text, or `nil`.
    package static func instant(rfc3339 text: String) -> Int64? {
        let parts = text.split(separator: "T")
        guard parts.count == 2, let date = CivilDate(parsing: String(parts[0])), parts[1].hasSuffix("Z") else { return nil }
        let time = parts[1].dropLast().split(separator: ":")
        guard time.count == 3, let h = Int(time[0]), let m = Int(time[1]), let sec = Int(time[2]), h < 24, m < 60, sec < 60 else { return nil }
        return Int64(date.daysSinceEpoch) * 86_400 + Int64(h * 3600 + m * 60 + sec)
    }

    /// ``write(to:)`` as text.
    package var json: String {
        var writer = JSONWriter(capacity: 128)
        write(to: &writer)
        return writer.string
    }

    /// Preferences from their ``json`` (as the change history keeps them), or `nil` when `json` is
    /// not such an object. Values are taken as written (the writer checked them).
    package init?(json: String) {
        struct Coded: Decodable {
            var every: Int
            var from: String?
            var pausedUntil: String?
            var follow: [String]
            var mute: [String]
            var off: Bool
            var fewer: [Fewer]?
        }
        struct Fewer: Decodable {
            var topic: String
            var until: String
        }
        guard let coded = try? JSONDecoder().decode(Coded.self, from: Data(json.utf8)) else { return nil }
        var from: ISOWeek?
        if let text = coded.from {
            guard let week = try? ISOWeek(parsing: text) else { return nil }
            from = week
        }
        var pausedUntil: CivilDate?
        if let text = coded.pausedUntil {
            guard let date = CivilDate(parsing: text) else { return nil }
            pausedUntil = date
        }
        self.init(every: coded.every, from: from, pausedUntil: pausedUntil, follow: coded.follow, mute: coded.mute, off: coded.off)
        for entry in coded.fewer ?? [] {
            guard let until = Self.instant(rfc3339: entry.until) else { return nil }
            fewer.append(FewerTopic(topic: entry.topic, until: until))
        }
    }
}

extension CivilDate {
    /// A date written `YYYY-MM-DD` (a real date of years 1 to 9999), or `nil`.
    package init?(parsing text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            year >= 1, (1...12).contains(month), day >= 1
        else { return nil }
        let date = CivilDate(year: year, month: month, day: day)
        // A day past the month's end comes back as another date.
        guard CivilDate(daysSinceEpoch: date.daysSinceEpoch) == date else { return nil }
        self = date
    }
}

extension ISOWeek {
    /// The ISO week holding an instant (Unix seconds) in UTC: the week a store counts a new pace from.
    package init(utcInstant instant: Int64) {
        let days = instant >= 0 ? instant / 86_400 : (instant - 86_399) / 86_400
        self.init(containing: CivilDate(daysSinceEpoch: Int(days)))
    }
}
