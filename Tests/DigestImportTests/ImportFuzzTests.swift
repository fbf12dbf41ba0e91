import DigestCore
@testable import DigestImport
import DigestStore
import DigestTesting
import Foundation
import Testing

/// A seeded mutation fuzzer over the importer (``LineMutator`` on valid lines of the three files):
/// every line is imported or skipped with a reason, nothing crashes and no line stops the import.
/// The first test runs the importer into a sink that checks each record against what the stores need
/// of it; the second imports a smaller run into SQLite and PostgreSQL and requires the same outcome.
///
/// `DIGEST_IMPORT_FUZZ_ITERATIONS` sets the lines of the first test (the second takes a tenth), and
/// `DIGEST_FUZZ_SEED` the seed, for a long run:
///
/// ```
/// DIGEST_IMPORT_FUZZ_ITERATIONS=300000 swift test --skip-build --filter ImportFuzzTests
/// ```
@Suite struct ImportFuzzTests {
    static let iterations = ProcessInfo.processInfo.environment["DIGEST_IMPORT_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 3_000
    static let seed = ProcessInfo.processInfo.environment["DIGEST_FUZZ_SEED"].flatMap(UInt64.init) ?? 0x1A9_0E7

    static let seeds: [ImportKind: [String]] = [
        .users: [
            #"{"id":"u1","locale":"pl-PL","timeZone":"Europe/Warsaw","optedOut":false,"devices":[{"token":"tok-1","platform":"android","registeredAt":"2026-11-01T08:00:00Z"},{"token":"tok-2","platform":"ios"}]}"#,
            #"{"id":"u2","locale":"zh-Hans","timeZone":"Asia/Shanghai","devices":[{"token":"tok-3","platform":"web"}]}"#,
            #"{"id":"u3","locale":"ru","timeZone":"UTC","optedOut":true,"devices":[]}"#,
            #"{"id":"u4"}"#,
        ],
        .articles: [
            #"{"id":"a1","title":"Swift 6 on the server","url":"https://news.example/a1","imageUrl":"https://img.example/a1.jpg","topics":["swift","server"],"publishedAt":"2026-11-16T08:00:00Z","readingMinutes":6,"language":"en"}"#,
            #"{"id":"a2","title":"Zażółć gęślą jaźń","url":"http://news.example/a2","imageUrl":null,"topics":["języki"],"publishedAt":"2026-11-16T09:30:00+01:00","readingMinutes":12,"language":"pl"}"#,
            #"{"id":"a3","title":"数据库","url":"https://news.example/a3","publishedAt":"2026-11-17T00:00:00.5Z"}"#,
        ],
        .reads: [
            #"{"userId":"u1","articleId":"a1","readAt":"2026-11-17T19:22:05Z","seconds":312}"#,
            #"{"userId":"u2","articleId":"a2","readAt":"2026-11-17T20:00:00+08:00","seconds":30}"#,
            #"{"userId":"u1","articleId":"a3","readAt":"2026-11-18T07:00:00Z"}"#,
        ],
    ]

    /// Writes `count` mutated lines of each kind (users, articles, reads) into `dir`.
    static func corpus(_ count: Int, seed: UInt64, in dir: TemporaryDirectory) throws -> [(ImportKind, String)] {
        var mutator = LineMutator(seed: seed)
        let all = ImportKind.allCases.flatMap { seeds[$0] ?? [] }.map { Array($0.utf8) }
        return try ImportKind.allCases.map { kind in
            let lines = seeds[kind] ?? []
            var bytes: [UInt8] = []
            for _ in 0..<count {
                let line = Array(lines[mutator.below(lines.count)].utf8)
                bytes += mutator.mutate(line, splicing: all[mutator.below(all.count)]) + [0x0A]
            }
            let path = dir.path("\(kind.rawValue).jsonl")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return (kind, path)
        }
    }

    /// What became of a fuzz run's lines.
    struct Tally: CustomStringConvertible {
        var lines = 0
        var imported = 0
        var blank = 0
        var skipped: [String: Int] = [:]

        var description: String {
            let reasons = skipped.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }
            return "\(lines) lines: \(imported) imported, \(skipped.values.reduce(0, +)) skipped ("
                + reasons.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + "), \(blank) blank"
        }
    }

    @Test func mutatedLinesAreImportedOrSkippedAndNeverStopTheImport() async throws {
        let dir = try TemporaryDirectory()
        let files = try Self.corpus(Self.iterations / 3, seed: Self.seed, in: dir)
        let started = ContinuousClock.now
        let sink = CheckingSink()
        var importer = HistoryImporter(sink: sink)
        // One line a batch: every record the importer keeps reaches the sink, so each line is
        // accounted for below.
        importer.batchSize = 1
        var problems = 0
        var unexplained: [String] = []
        importer.onProblem = { problem in
            problems += 1
            if problem.code == nil || problem.line == nil { unexplained.append(problem.description) }
        }
        var tally = Tally()
        for (kind, path) in files {
            let summary = try await importer.importFile(path, as: kind)
            tally.lines += summary.lines
            tally.skipped.merge(summary.skipped, uniquingKeysWith: +)
            let reader = try LineReader(path: path)
            while let line = try reader.next() {
                if ImportLineTests.isBlank(line, kind) { tally.blank += 1 }
            }
        }
        let elapsed = started.duration(to: .now)
        tally.imported = sink.records
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("import fuzz (seed \(Self.seed)): \(tally), \(String(format: "%.2f", seconds)) s")
        #expect(sink.violations.isEmpty, "\(sink.violations.prefix(20))")
        #expect(unexplained.isEmpty, "\(unexplained.prefix(20))")
        #expect(problems == tally.skipped.values.reduce(0, +))
        let nonDuplicates = tally.skipped.filter { $0.key != ImportSkipReason.duplicateID.rawValue }.values.reduce(0, +)
        #expect(tally.imported + nonDuplicates + tally.blank == tally.lines, "\(tally)")
        #expect(tally.imported > tally.lines / 10 && tally.skipped.count > 10, "\(tally)")
    }

    @Test func mutatedLinesImportTheSameOnSQLiteAndPostgreSQL() async throws {
        let dir = try TemporaryDirectory()
        let files = try Self.corpus(max(30, Self.iterations / 30), seed: Self.seed &+ 1, in: dir)
        // Per store: the report, the summaries, and the rows read back.
        var outcomes: [Backend: [[String]]] = [:]
        for backend in Backend.allCases {
            let store = try await StoreHarness(backend)
            let log = ImportProblemLog()
            let summaries = try await store.withImporter { base in
                var importer = base
                importer.batchSize = 50
                importer.onProblem = { log.lines.append($0.description) }
                var summaries: [String] = []
                for (kind, path) in files {
                    let summary = try await importer.importFile(path, as: kind)
                    // Not written and unchanged: when readers of one batch list the same token, SQLite
                    // moves it line by line and PostgreSQL settles the batch first, so the counts may
                    // differ while the rows agree.
                    summaries.append("\(kind): \(summary.lines) lines, skipped \(summary.skipped.sorted { $0.key < $1.key })")
                }
                return summaries
            }
            let rows = try await store.withReader { reader in
                let users = try await reader.users(idPrefix: "", limit: 100_000).sorted { $0.key < $1.key }
                let reads = try await reader.reads(of: users, since: users.map { _ in -62_167_305_600 })
                let articles = try await reader.articles(publishedFrom: -62_167_305_600, until: 300_000_000_000)
                return users.map { "\($0.reader.id) \($0.reader.locale) \($0.reader.timeZone) \($0.reader.optedOut) \($0.reader.devices.sorted { $0.token < $1.token })" }.sorted()
                    + articles.map { "\($0)" }.sorted()
                    + zip(users, reads).flatMap { user, events in events.map { "\(user.reader.id) \($0.articleID) \($0.readAt) \($0.seconds)" } }.sorted()
            }
            outcomes[backend] = [log.lines, summaries, rows]
        }
        let sqlite = outcomes[.sqlite] ?? [], postgres = outcomes[.postgres] ?? []
        for (part, name) in ["report", "summaries", "rows"].enumerated() {
            // Compared apart from the expectation, so a failure prints the first difference, not the lists.
            let same = sqlite[part] == postgres[part]
            #expect(same, "\(name): \(Self.firstDifference(sqlite[part], postgres[part]))")
        }
    }

    /// Where two lists first differ, shortly.
    static func firstDifference(_ sqlite: [String], _ postgres: [String]) -> String {
        for (a, b) in zip(sqlite, postgres) where a != b {
            return "SQLite \(a.prefix(300)) | PostgreSQL \(b.prefix(300))"
        }
        return "SQLite \(sqlite.count) lines, PostgreSQL \(postgres.count) lines"
    }
}
