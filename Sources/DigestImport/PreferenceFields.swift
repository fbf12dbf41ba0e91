package import DigestCore

/// One problem of a reader's preferences object: the field it is in, relative to the object
/// (`every`, `mute[3]`), the import's reason (``ImportSkipReason``) and what a person needs to fix it.
package struct PreferenceProblem: Sendable, Hashable {
    /// The field, as a path inside the preferences object: `every`, `from`, `pausedUntil`, `follow`,
    /// `mute[3]`, `off`; `""` for the object itself.
    package var field: String
    package var reason: ImportSkipReason
    /// A sentence naming the field (under the import's path, `preferences.mute[3]`, in a problem line).
    package var message: String

    package init(field: String, reason: ImportSkipReason, message: String) {
        self.field = field
        self.reason = reason
        self.message = message
    }
}

/// A reader's preferences object as JSON (`users.jsonl`'s `preferences`, the API's request body):
/// every key optional, `null` the same as absent (its default), keys it does not know ignored.
///
/// - `every`: 1, 2 or 4, a whole number (`2.0` too); anything else, a string like `"2"` included, is
///   `bad_every`;
/// - `from`: an ISO week written `2026-W45`, else `bad_from`;
/// - `pausedUntil`: a date written `2026-12-14`, else `bad_paused_until`;
/// - `follow`, `mute`: lists of topic keys (``ReaderPreferences/isValidTopic(_:)``: 1 to 64 code
///   points, no control characters, kept exactly as written); an element that is not such a string is
///   `bad_preference_topic`; a topic listed twice is kept once, where first listed; more than
///   ``ReaderPreferences/maxTopics`` distinct topics in one list is `too_many_preference_topics`; not a
///   list is `wrong_type`;
/// - `off`: `true` or `false`, else `wrong_type`.
///
/// The API answers every problem at once; the import skips a line for the first.
package enum PreferenceFields {
    /// The preferences of `value`, or every problem it has (with `nil` preferences).
    package static func parse(_ value: JSONValue) -> (preferences: ReaderPreferences?, problems: [PreferenceProblem]) {
        let parsed = read(value, prefix: "")
        return (parsed.problems.isEmpty ? parsed.preferences : nil, parsed.problems)
    }

    /// What ``parse(_:)`` gives, with whether the object gave `off` (not absent or `null`); problems
    /// name their fields in their messages after `prefix` (`preferences.`).
    static func read(_ value: JSONValue, prefix: String) -> (preferences: ReaderPreferences, offGiven: Bool, problems: [PreferenceProblem]) {
        var preferences = ReaderPreferences()
        var problems: [PreferenceProblem] = []
        guard case .object(let fields) = value else {
            let name = prefix.hasSuffix(".") ? String(prefix.dropLast()) : "preferences"
            problems.append(.init(field: "", reason: .wrongType, message: "'\(name)' must be an object, not \(value.kind)"))
            return (preferences, false, problems)
        }
        func present(_ key: String) -> JSONValue? {
            switch fields[key] {
            case nil, .null?: nil
            case let value?: value
            }
        }
        func problem(_ field: String, _ reason: ImportSkipReason, _ message: String) {
            problems.append(.init(field: field, reason: reason, message: "\(prefix)\(field) \(message)"))
        }

        if let every = present("every") {
            let allowed = "1, 2 or 4 (weeks)"
            if case .number(let text) = every, case .value(let number) = JSONValue.integer(text),
                ReaderPreferences.allowedEvery.contains(Int(clamping: number))
            {
                preferences.every = Int(number)
            } else if case .number(let text) = every {
                problem("every", .badEvery, "\(shown(text)) is not \(allowed)")
            } else {
                problem("every", .badEvery, "must be the number \(allowed), not \(every.kind)")
            }
        }
        if let from = present("from") {
            if case .string(let text) = from, let week = try? ISOWeek(parsing: text), week.description == text {
                preferences.from = week
            } else if case .string(let text) = from {
                problem("from", .badFrom, "\(ImportFieldRules.quote(text)) is not an ISO week that exists, written like 2026-W45")
            } else {
                problem("from", .badFrom, "must be an ISO week written like 2026-W45, not \(from.kind)")
            }
        }
        if let paused = present("pausedUntil") {
            if case .string(let text) = paused, let date = CivilDate(parsing: text) {
                preferences.pausedUntil = date
            } else if case .string(let text) = paused {
                problem("pausedUntil", .badPausedUntil, "\(ImportFieldRules.quote(text)) is not a date that exists, written like 2026-12-14")
            } else {
                problem("pausedUntil", .badPausedUntil, "must be a date written like 2026-12-14, not \(paused.kind)")
            }
        }
        for key in ["follow", "mute"] {
            guard let list = present(key) else { continue }
            guard case .array(let elements) = list else {
                problem(key, .wrongType, "must be a list of topics, not \(list.kind)")
                continue
            }
            var topics: [String] = []
            var seen = Set<[UInt8]>()
            var bad = false
            for (index, element) in elements.enumerated() {
                let field = "\(key)[\(index)]"
                guard case .string(let topic) = element else {
                    problem(field, .badPreferenceTopic, "must be a topic (a string), not \(element.kind)")
                    bad = true
                    continue
                }
                guard ReaderPreferences.isValidTopic(topic) else {
                    let length = topic.unicodeScalars.count
                    let why =
                        length == 0
                        ? "is empty"
                        : length > ReaderPreferences.maxTopicLength
                            ? "is \(length) characters, over the limit of \(ReaderPreferences.maxTopicLength)"
                            : "holds a control character"
                    problem(field, .badPreferenceTopic, "\(ImportFieldRules.quote(topic)) \(why)")
                    bad = true
                    continue
                }
                // Compared exactly, as articles carry them: by their bytes, not by canonical equivalence.
                if seen.insert(Array(topic.utf8)).inserted { topics.append(topic) }
            }
            if topics.count > ReaderPreferences.maxTopics {
                problem(key, .tooManyPreferenceTopics, "lists \(topics.count) topics, over the limit of \(ReaderPreferences.maxTopics)")
            }
            if !bad {
                if key == "follow" { preferences.follow = topics } else { preferences.mute = topics }
            }
        }
        var offGiven = false
        if let off = present("off") {
            if case .bool(let value) = off {
                preferences.off = value
                offGiven = true
            } else {
                problem("off", .wrongType, "must be true or false, not \(off.kind)")
            }
        }
        return (preferences, offGiven, problems)
    }

    /// A number's text for a problem, cut after 30 characters.
    private static func shown(_ text: String) -> String {
        text.count > 30 ? String(text.prefix(30)) + "…" : text
    }
}
