import DigestCore
@testable import DigestImport
import DigestStore
import DigestTesting
import Foundation
import Testing

/// The pieces under the importer, one rule at a time: the line reader's limit and line breaks, the
/// JSON reader, whole numbers, instants and each field rule with its reason.
@Suite struct ImportLineTests {
    /// The reason a line of `kind` is skipped for, or `nil` when it goes in.
    static func reason(_ line: String, _ kind: ImportKind = .users) -> ImportSkipReason? {
        reason(bytes: Array(line.utf8), kind)
    }

    static func reason(bytes: [UInt8], _ kind: ImportKind = .users) -> ImportSkipReason? {
        do {
            _ = try HistoryImporter<NullSink>.record(from: .bytes(bytes), kind: kind)
            return nil
        } catch {
            return error.code
        }
    }

    /// Whether the importer takes `line` for a blank line (no record, no problem).
    static func isBlank(_ line: LineReader.Line, _ kind: ImportKind) -> Bool {
        do {
            return try HistoryImporter<NullSink>.record(from: line, kind: kind) == nil
        } catch {
            return false
        }
    }

    @Test func lineReaderHoldsLinesUpToTheLimitAndReadsPastLongerOnes() throws {
        let dir = try TemporaryDirectory()
        let limit = 100_000
        // Lines longer than the reader's chunk, a CRLF line exactly at the limit, a line one over it,
        // an empty line, and a last line without a line break.
        var bytes = Array(repeating: UInt8(ascii: "a"), count: limit) + [0x0D, 0x0A]
        bytes += Array(repeating: UInt8(ascii: "b"), count: limit + 1) + [0x0A]
        bytes += Array(repeating: UInt8(ascii: "c"), count: 3 * limit) + [0x0D, 0x0A]
        bytes += [0x0A] + Array("last\r".utf8)
        let path = dir.path("lines.jsonl")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let reader = try LineReader(path: path, maxLineBytes: limit)
        var lines: [String] = []
        while let line = try reader.next() {
            switch line {
            case .bytes(let bytes): lines.append("\(bytes.count) \(bytes.first.map { String(UnicodeScalar($0)) } ?? "-")")
            case .tooLong(let length): lines.append("too long \(length)")
            }
        }
        #expect(lines == ["\(limit) a", "too long \(limit + 1)", "too long \(3 * limit + 1)", "0 -", "4 l"])
    }

    @Test func theImporterReadsAFileOfMegabyteLinesWithoutStopping() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("users.jsonl")
        var bytes: [UInt8] = []
        for index in 0..<5 {
            bytes += Array(#"{"id":"u\#(index)","locale":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: index * 900_000)
            bytes += Array(#""}"#.utf8) + [0x0A]
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let sink = CheckingSink()
        let summary = try await HistoryImporter(sink: sink).importFile(path, as: .users)
        // 0 and 900,000 bytes fit in 1 MiB but not as a locale; the rest are over the line limit.
        #expect(summary.lines == 5 && summary.skipped == ["line_too_long": 3, "bad_locale": 1] && sink.records == 1)
    }

    @Test func blankLinesAndByteOrderMarksAreNotRecords() {
        #expect(Self.isBlank(.bytes(Array(" \t\r".utf8)), .users))
        #expect(Self.isBlank(.bytes([0xEF, 0xBB, 0xBF, 0x20]), .reads))
        #expect(!Self.isBlank(.bytes(Array("x".utf8)), .users) && !Self.isBlank(.tooLong(1 << 21), .users))
        #expect(Self.reason(bytes: [0xEF, 0xBB, 0xBF] + Array(#"{"id":"u1"}"#.utf8)) == nil)
        #expect(Self.reason(bytes: [0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF] + Array(#"{"id":"u1"}"#.utf8)) == .badJSON)
        #expect(Self.reason(bytes: [0xFF, 0xFE] + Array(#"{"id":"u1"}"#.utf8)) == .notUTF8)
    }

    @Test func theJSONReaderIsStrict() {
        let cases: [(String, ImportSkipReason?)] = [
            (#"{"id":"u1"}"#, nil),
            (#"  {"id" : "u1" , "x" : [ 1 , -0.5e-3 , true , false , null , { } , [ ] ] }  "#, nil),
            (#"{"id":"\u00e9\ud83d\ude00\/\"\\\b\f\n\r\t"}"#, .badID),
            (#"{"id":"u1",}"#, .badJSON),
            (#"{"id":"u1"} x"#, .badJSON),
            (#"{"id":"u1","id":"u2"}"#, .badJSON),
            (#"{"id":'u1'}"#, .badJSON),
            (#"{"id":"u1","n":01}"#, .badJSON),
            (#"{"id":"u1","n":1.}"#, .badJSON),
            (#"{"id":"u1","n":-}"#, .badJSON),
            (#"{"id":"u1","n":+1}"#, .badJSON),
            (#"{"id":"u1","n":NaN}"#, .badJSON),
            (#"{"id":"u1","x":tru}"#, .badJSON),
            (#"{"id":"u1\x"}"#, .badJSON),
            (#"{"id":"u1\u12"}"#, .badJSON),
            (#"{"id":"u1"#, .badJSON),
            ("{\"id\":\"u\u{1}1\"}", .badJSON),
            (#"{"id":"\ud800"}"#, .loneSurrogate),
            (#"{"id":"\ud800\u0041"}"#, .loneSurrogate),
            (#"{"id":"\udfff\ud800"}"#, .loneSurrogate),
            (#"{"id":"u1","x":"\ud800"}"#, .loneSurrogate),
            (#"[]"#, .notAnObject),
            (#""u1""#, .notAnObject),
            (#"null"#, .notAnObject),
        ]
        for (line, expected) in cases {
            #expect(Self.reason(line) == expected, "\(line)")
        }
        #expect(Self.reason(bytes: Array(#"{"id":"u"#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8)) == .notUTF8, "an overlong form")
        #expect(Self.reason(bytes: Array(#"{"id":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8)) == .notUTF8, "an encoded surrogate")
    }

    @Test func nestingIsRefusedPastTheLimitHoweverDeep() {
        func nested(_ depth: Int) -> String { #"{"id":"u1","x":"# + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}" }
        #expect(Self.reason(nested(ImportLimits.maxNesting)) == nil)
        #expect(Self.reason(nested(ImportLimits.maxNesting + 1)) == .tooDeep)
        // Deep enough to overflow a parser that recursed all the way, and unbalanced.
        let started = ContinuousClock.now
        #expect(Self.reason(#"{"x":"# + String(repeating: #"{"x":["#, count: 500_000)) == .tooDeep)
        #expect(started.duration(to: .now) < .seconds(2))
    }

    @Test func wholeNumbersAreExact() {
        let cases: [(String, JSONValue.Integer)] = [
            ("0", .value(0)), ("-0", .value(0)), ("6", .value(6)), ("6.0", .value(6)), ("6.000e0", .value(6)), ("1e2", .value(100)),
            ("1E+2", .value(100)), ("100e-2", .value(1)), ("0.5e1", .value(5)), ("0e-99999999999", .value(0)),
            ("9223372036854775807", .value(Int64.max)), ("-9223372036854775808", .value(Int64.min)),
            ("9223372036854775808", .overflow), ("99999999999999999999", .overflow), ("1e19", .overflow), ("1e400", .overflow),
            ("1e99999999999999999999", .overflow), ("1.5", .fraction), ("1e-400", .fraction), ("-0.1", .fraction),
            ("1.00000000000000000001", .fraction),
        ]
        for (text, expected) in cases {
            #expect(JSONValue.integer(text) == expected, "\(text)")
        }
    }

    @Test func instantsAreRFC3339AndMustExist() {
        #expect(Timestamp.parse("2026-11-17T19:22:05Z") == 1_794_943_325)
        #expect(Timestamp.parse("2026-11-17t19:22:05.123456z") == 1_794_943_325)
        #expect(Timestamp.parse("2026-11-17 20:22:05+01:00") == 1_794_943_325)
        #expect(Timestamp.parse("2026-11-17T19:22:05-23:59") == 1_795_029_665, "a day less a minute later")
        #expect(Timestamp.parse("2024-02-29T00:00:00Z") != nil)
        #expect(Timestamp.parse("2016-12-31T23:59:60Z") == Timestamp.parse("2017-01-01T00:00:00Z"))
        for bad in [
            "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z", "2026-11-00T00:00:00Z",
            "2026-11-17T24:00:00Z", "2026-11-17T19:60:00Z", "2026-11-17T19:22:61Z", "2026-11-17T19:22:05+24:00",
            "2026-11-17T19:22:05+01:60", "2026-11-17T19:22:05.Z", "2026-11-17T19:22:05", "2026-11-17", "2026-11-17T19:22Z",
            "+2026-11-17T19:22:05Z", "2026-11-17T19:22:05+0100", "2026-11-17T19:22:05Z ", "yesterday", "",
        ] {
            #expect(Timestamp.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func fieldsHoldTheKindOfValueTheyMust() {
        let cases: [(String, ImportKind, ImportSkipReason?)] = [
            (#"{"id":"u1","optedOut":"yes"}"#, .users, .wrongType),
            (#"{"id":"u1","optedOut":null,"locale":null,"timeZone":null,"devices":null}"#, .users, nil),
            (#"{"id":"u1","devices":[{"token":"t","platform":"ios","registeredAt":null}]}"#, .users, nil),
            (#"{"id":"u1","devices":[{"token":"t","platform":"ios","registeredAt":"2026-11-01T08:00:00Z"}]}"#, .users, nil),
            (#"{"id":"u1","devices":[{"token":"t","platform":"ios","registeredAt":"2026-11-31T08:00:00Z"}]}"#, .users, .badDate),
            (#"{"id":"u1","devices":[{"token":"t"}]}"#, .users, .missingField),
            (#"{"id":"u1","devices":[{"token":"t","platform":"Android"}]}"#, .users, .badPlatform),
            (#"{"id":"u1","devices":[{"token":"t\u0000","platform":"ios"}]}"#, .users, .badToken),
            (#"{"id":"u1","devices":[{"token":"t\u0085","platform":"ios"}]}"#, .users, .badToken),
            (#"{"id":"u1","devices":[{"token":"","platform":"ios"}]}"#, .users, .badToken),
            (#"{"id":"u1\u2028"}"#, .users, .badID),
            (#"{"id":"u1\u007f"}"#, .users, .badID),
            (#"{"id":"u1 "}"#, .users, nil),
            (#"{"id":"u1","locale":"pl\u0085"}"#, .users, .badLocale),
            (#"{"id":"u1","locale":"..\/..\/etc\/passwd"}"#, .users, nil),
            (#"{"id":"a1","title":"T","url":"https://x.example","publishedAt":"2026-11-16T08:00:00Z","readingMinutes":1440}"#, .articles, nil),
            (#"{"id":"a1","title":"T","url":"https://x.example","publishedAt":"2026-11-16T08:00:00Z","readingMinutes":-1e0}"#, .articles, .badNumber),
            (#"{"id":"a1","title":"T","url":"https://x.example","publishedAt":"2026-11-16T08:00:00Z","readingMinutes":-99999999999999999999}"#, .articles, .badNumber),
            (#"{"id":"a1","title":"T","url":"https://x.example","publishedAt":"2026-11-16T08:00:00Z","readingMinutes":[6]}"#, .articles, .wrongType),
            (#"{"id":"a1","title":"T","url":"https://x.example","publishedAt":20261116}"#, .articles, .wrongType),
            (#"{"id":"a1","title":"T","url":"https://x.example","imageUrl":7,"publishedAt":"2026-11-16T08:00:00Z"}"#, .articles, .wrongType),
            (#"{"id":"a1","title":"T","url":"https://x.example","publishedAt":"2026-11-16T08:00:00Z","language":"pl-PL-x-aaaaaaaa-bbbbbbbb-cccccccc-dddddddd-eeeeeeee-ffffffff-gggggggg-hhhhhhhh"}"#, .articles, .badLanguage),
            (#"{"userId":"u1","articleId":"a1","readAt":"2026-11-16T08:00:00Z","seconds":null}"#, .reads, nil),
            (#"{"userId":"u1","articleId":"","readAt":"2026-11-16T08:00:00Z"}"#, .reads, .badID),
            (#"{"userId":"u1","articleId":"a1"}"#, .reads, .missingField),
        ]
        for (line, kind, expected) in cases {
            #expect(Self.reason(line, kind) == expected, "\(line)")
        }
    }

    @Test func problemsNameTheRecordAndEscapeWhatTheyQuote() throws {
        func message(_ line: String, _ kind: ImportKind = .users) -> String {
            do {
                _ = try HistoryImporter<NullSink>.record(from: .bytes(Array(line.utf8)), kind: kind)
                return "-"
            } catch {
                return "\(error.code.rawValue): \(error.reason)"
            }
        }
        #expect(message(#"{"id":"u\u001b[2J"}"#) == #"bad_id: user id 'u\u{1B}[2J' holds a control character (U+001B)"#)
        #expect(message(#"{"id":"u1","devices":[{"token":"secret\n","platform":"ios"}]}"#)
            == "bad_token: user 'u1': devices[0]: token holds a control character (U+000A)")
        #expect(message(#"{"id":"a1","title":"T","url":"https://x.example","publishedAt":"2026-11-16T08:00:00Z","readingMinutes":6.5}"#, .articles)
            == "bad_number: article 'a1': readingMinutes 6.5 is not a whole number")
        #expect(message(#"{"id":"u\u202e1"}"#) == "-")
        #expect(ImportFieldRules.quote("u\u{202E}1") == #"'u\u{202E}1'"#)
        #expect(ImportFieldRules.quote(String(repeating: "x", count: 100)) == "'" + String(repeating: "x", count: 60) + "…'")
    }
}

/// A sink that writes nothing (the tests that only parse lines name it as the importer's type).
struct NullSink: HistoryImportSink {
    func write(_ batch: ImportBatch) async throws -> ImportBatchResult { ImportBatchResult(written: batch.count) }
}
