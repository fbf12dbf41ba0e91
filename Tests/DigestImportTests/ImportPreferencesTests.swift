import DigestCore
@testable import DigestImport
import DigestStore
import DigestTesting
import Foundation
import Testing

/// A `users.jsonl` line's `preferences` and `optedOut` (docs/010), and the validator the API shares
/// with the import (``PreferenceFields``): every rule with its reason and field.
@Suite struct ImportPreferencesTests {
    /// What a users line gives the store, or the reason and problem text it is skipped for.
    static func user(_ line: String) -> Result<ImportedUser, LineProblem> {
        do {
            guard case .user(let user)? = try HistoryImporter<NullSink>.record(from: .bytes(Array(line.utf8)), kind: .users) else {
                Issue.record("not a user line: \(line)")
                return .failure(LineProblem(.badJSON, "not a user"))
            }
            return .success(user)
        } catch {
            return .failure(error)
        }
    }

    static func reason(_ line: String) -> ImportSkipReason? {
        if case .failure(let problem) = user(line) { return problem.code }
        return nil
    }

    static func imported(_ line: String) throws -> ImportedUser {
        try user(line).get()
    }

    /// `{"preferences": …}` as the validator reads it.
    static func parse(_ json: String) throws -> (preferences: ReaderPreferences?, problems: [PreferenceProblem]) {
        PreferenceFields.parse(try JSONLineParser.document(Array(json.utf8)))
    }

    @Test func aLineWithPreferencesReplacesTheWholeObject() throws {
        let user = try Self.imported(
            #"{"id":"u1","preferences":{"every":2,"from":"2026-W45","pausedUntil":"2026-12-14","follow":["science","science","Science"],"mute":["sports"],"off":false,"colour":"blue"}}"#
        )
        let expected = ReaderPreferences(
            every: 2, from: try ISOWeek(parsing: "2026-W45"), pausedUntil: CivilDate(year: 2026, month: 12, day: 14),
            follow: ["science", "Science"], mute: ["sports"], off: false)
        #expect(user.preferences == expected)
        #expect(user.off == false && user.reader.preferences == expected)
        // Absent keys take their defaults; `null` is absent; an empty object is the defaults.
        #expect(try Self.imported(#"{"id":"u1","preferences":{"every":4}}"#).preferences == ReaderPreferences(every: 4))
        #expect(try Self.imported(#"{"id":"u1","preferences":{"every":null,"from":null,"mute":null}}"#).preferences == ReaderPreferences())
        #expect(try Self.imported(#"{"id":"u1","preferences":{}}"#).preferences == ReaderPreferences())
        #expect(try Self.imported(#"{"id":"u1","preferences":{"every":2.0}}"#).preferences?.every == 2)
    }

    @Test func optedOutSetsOffAndALineWithNeitherLeavesIt() throws {
        // Neither: the stored preferences and off stay (nil), a change from absent meaning false.
        let neither = try Self.imported(#"{"id":"u1"}"#)
        #expect(neither.preferences == nil && neither.off == nil && neither.reader.optedOut == false)
        #expect(try Self.imported(#"{"id":"u1","optedOut":null}"#).off == nil)
        // optedOut alone: off, the other preferences as stored.
        let out = try Self.imported(#"{"id":"u1","optedOut":true}"#)
        #expect(out.preferences == nil && out.off == true && out.reader.optedOut)
        #expect(try Self.imported(#"{"id":"u1","optedOut":false}"#).off == false)
        // With preferences: optedOut is their off, preferences.off agrees or is absent.
        let both = try Self.imported(#"{"id":"u1","optedOut":true,"preferences":{"every":2}}"#)
        #expect(both.preferences == ReaderPreferences(every: 2, off: true) && both.off == true)
        #expect(try Self.imported(#"{"id":"u1","optedOut":true,"preferences":{"off":true}}"#).off == true)
        #expect(try Self.imported(#"{"id":"u1","preferences":{"off":true}}"#).preferences == ReaderPreferences(off: true))
        // Preferences without off and no optedOut: the whole object replaced, off false.
        #expect(try Self.imported(#"{"id":"u1","preferences":{"mute":["x"]}}"#).off == false)
        // Both, differing: skipped.
        guard case .failure(let problem) = Self.user(#"{"id":"u1","optedOut":true,"preferences":{"off":false}}"#) else {
            Issue.record("a conflicting off went in")
            return
        }
        #expect(problem.code == .conflictingOff)
        #expect(problem.reason == "user 'u1': optedOut true and preferences.off false differ (give one, or the same value)")
        #expect(Self.reason(#"{"id":"u1","optedOut":false,"preferences":{"off":true}}"#) == .conflictingOff)
    }

    @Test func badValuesSkipTheLineWithTheirReasons() {
        let cases: [(String, ImportSkipReason?)] = [
            (#""every":3"#, .badEvery), (#""every":"2""#, .badEvery), (#""every":0"#, .badEvery), (#""every":-1"#, .badEvery),
            (#""every":1.5"#, .badEvery), (#""every":true"#, .badEvery), (#""every":[2]"#, .badEvery),
            (#""every":1e400"#, .badEvery),
            (#""from":"2026-W54""#, .badFrom), (#""from":"2026W45""#, .badFrom), (#""from":"2026-w45""#, .badFrom),
            (#""from":"2026-W5""#, .badFrom), (#""from":202645"#, .badFrom), (#""from":"2020-W53""#, nil), (#""from":"2027-W53""#, .badFrom), (#""from":"2026-W53""#, nil),
            (#""pausedUntil":"2026-02-29""#, .badPausedUntil), (#""pausedUntil":"2028-02-29""#, nil),
            (#""pausedUntil":"2026-12-14T00:00:00Z""#, .badPausedUntil), (#""pausedUntil":"26-12-14""#, .badPausedUntil),
            (#""pausedUntil":20261214"#, .badPausedUntil), (#""pausedUntil":"2026-1-14""#, .badPausedUntil),
            (#""follow":[""]"#, .badPreferenceTopic), (#""mute":[1]"#, .badPreferenceTopic), (#""mute":[null]"#, .badPreferenceTopic),
            (#""mute":["a\u0007b"]"#, .badPreferenceTopic), (#""mute":["a\u0085b"]"#, .badPreferenceTopic),
            (#""follow":["\#(String(repeating: "ż", count: 65))"]"#, .badPreferenceTopic),
            (#""follow":["\#(String(repeating: "ż", count: 64))"]"#, nil), (#""follow":["😀 ünïcode"]"#, nil),
            (#""follow":"science""#, .wrongType), (#""off":"true""#, .wrongType), (#""off":1"#, .wrongType),
        ]
        for (field, expected) in cases {
            let line = #"{"id":"u1","preferences":{"# + field + "}}"
            #expect(Self.reason(line) == expected, "\(line)")
        }
        #expect(Self.reason(#"{"id":"u1","preferences":[]}"#) == .wrongType)
        #expect(Self.reason(#"{"id":"u1","preferences":"every 2"}"#) == .wrongType)
        #expect(Self.reason(#"{"id":"u1","preferences":null}"#) == nil)
    }

    @Test func aHundredTopicsAreTheLimitCountedOnceEach() throws {
        func list(_ count: Int, repeated: Int = 0) -> String {
            "[" + ((0..<count).map { "\"t\($0)\"" } + Array(repeating: "\"t0\"", count: repeated)).joined(separator: ",") + "]"
        }
        #expect(Self.reason(#"{"id":"u1","preferences":{"follow":\#(list(100))}}"#) == nil)
        #expect(Self.reason(#"{"id":"u1","preferences":{"mute":\#(list(100, repeated: 5))}}"#) == nil)
        #expect(Self.reason(#"{"id":"u1","preferences":{"mute":\#(list(101))}}"#) == .tooManyPreferenceTopics)
        #expect(Self.reason(#"{"id":"u1","preferences":{"follow":\#(list(101))}}"#) == .tooManyPreferenceTopics)
        // Compared exactly: a topic in NFD is another topic than its NFC form.
        let user = try Self.imported(#"{"id":"u1","preferences":{"mute":["caf\u00e9","cafe\u0301","caf\u00e9"]}}"#)
        #expect(user.preferences?.mute.map { Array($0.utf8) } == [Array("caf\u{E9}".utf8), Array("cafe\u{301}".utf8)])
    }

    @Test func theValidatorListsEveryProblemWithItsField() throws {
        let parsed = try Self.parse(
            #"{"every":"2","from":"2026-W99","pausedUntil":"tomorrow","follow":["ok","",7],"mute":["a","b","c",""],"off":"no","x":1}"#)
        #expect(parsed.preferences == nil)
        #expect(parsed.problems.map(\.field) == ["every", "from", "pausedUntil", "follow[1]", "follow[2]", "mute[3]", "off"])
        #expect(
            parsed.problems.map(\.reason) == [
                .badEvery, .badFrom, .badPausedUntil, .badPreferenceTopic, .badPreferenceTopic, .badPreferenceTopic, .wrongType,
            ])
        #expect(parsed.problems[0].message == "every must be the number 1, 2 or 4 (weeks), not a string")
        #expect(parsed.problems[1].message == "from '2026-W99' is not an ISO week that exists, written like 2026-W45")
        #expect(parsed.problems[5].message == "mute[3] '' is empty")
        let many = try Self.parse(#"{"mute":[\#((0...100).map { "\"m\($0)\"" }.joined(separator: ","))]}"#)
        #expect(many.problems == [PreferenceProblem(field: "mute", reason: .tooManyPreferenceTopics, message: "mute lists 101 topics, over the limit of 100")])
        #expect(try Self.parse("[1]").problems.map(\.reason) == [.wrongType])
        let good = try Self.parse(" {\"every\": 4,\n \"mute\": [\"sports\"]}\n")
        #expect(good.problems.isEmpty && good.preferences == ReaderPreferences(every: 4, mute: ["sports"]))
        // The import names the field under `preferences.`.
        guard case .failure(let problem) = Self.user(#"{"id":"u1","preferences":{"mute":["a","\u0001"]}}"#) else {
            Issue.record("a control character in a topic went in")
            return
        }
        #expect(problem.code == .badPreferenceTopic && problem.reason == #"user 'u1': preferences.mute[1] '\u{1}' holds a control character"#)
    }

    @Test func aDocumentIsOneJSONValueWithOrWithoutAByteOrderMark() throws {
        guard case .object(let fields) = try JSONLineParser.document([0xEF, 0xBB, 0xBF] + Array("{\"a\":\n[1]}\r\n".utf8)) else {
            Issue.record("not an object")
            return
        }
        #expect(fields.keys.sorted() == ["a"])
        for bad in ["", "{} {}", "{\"a\":1,\"a\":2}", "{\"a\":}"] {
            #expect(throws: LineProblem.self) { try JSONLineParser.document(Array(bad.utf8)) }
        }
        #expect(throws: LineProblem.self) { try JSONLineParser.document([0xFF]) }
    }
}
