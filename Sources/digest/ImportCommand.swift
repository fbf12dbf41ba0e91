import ArgumentParser
import DigestStore
import Foundation
import DigestImport

struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Load users, articles and reads from JSON Lines files.",
        discussion: """
            Each file's kind comes from its name (users…, articles…, reads…) or from --users/--articles/--reads. \
            Files load users first, then articles, then reads. Titles and topics are cleaned (NFC, control \
            characters removed); a line that cannot be imported as it is (not UTF-8 or JSON, a field of the wrong \
            type, a number or date out of range, an id or token with a control character, over a limit: \
            1 MiB a line, 256 bytes an id, 1,024 a token) is reported as file:line: reason: detail and \
            skipped (or stops the import with --strict). Of lines with the same user or article id the last \
            wins; the earlier ones are reported as duplicate_id. A user with more than 20 devices is imported \
            with all of them and counted as devices_over_limit (a run sends to 20 of them; never stops \
            --strict). Re-importing the same files changes nothing. The rules: docs/008-import.md.
            """)

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "JSON Lines files named users…, articles… or reads….")
    var files: [String] = []

    @Option(help: "A users file.") var users: [String] = []
    @Option(help: "An articles file.") var articles: [String] = []
    @Option(help: "A reads file.") var reads: [String] = []

    @Flag(help: "Stop at the first bad line instead of skipping it (duplicate ids never stop it).")
    var strict = false

    func run() async throws {
        var plan: [(ImportKind, String)] = users.map { (.users, $0) } + articles.map { (.articles, $0) } + reads.map { (.reads, $0) }
        for file in files {
            guard let kind = ImportKind(fileName: file) else {
                throw ValidationError("\(file): cannot tell the kind from the name; use --users, --articles or --reads")
            }
            plan.append((kind, file))
        }
        guard !plan.isEmpty else { throw ValidationError("no files to import") }
        let summaries = try await database.withStore { try await Importing.run(plan, database: $0, strict: strict) }
        for summary in summaries { print(Importing.line(summary)) }
    }
}

/// Import shared by `import` and `demo`.
enum Importing {
    static func run(_ plan: [(ImportKind, String)], database: some DigestDatabase, strict: Bool, quiet: Bool = false) async throws -> [ImportFileSummary] {
        try await database.withImportSink { sink in try await run(plan, sink: sink, strict: strict, quiet: quiet) }
    }

    static func run(_ plan: [(ImportKind, String)], sink: some HistoryImportSink, strict: Bool, quiet: Bool) async throws -> [ImportFileSummary] {
        let order: [ImportKind] = [.users, .articles, .reads]
        let sorted = plan.enumerated().sorted {
            (order.firstIndex(of: $0.element.0) ?? 0, $0.offset) < (order.firstIndex(of: $1.element.0) ?? 0, $1.offset)
        }.map(\.element)
        var importer = HistoryImporter(sink: sink)
        importer.strict = strict
        var reported = 0
        importer.onProblem = { problem in
            reported += 1
            if reported <= 1000 { printError(problem.description) }
            if reported == 1001 { printError("… further bad lines are counted in the summary only") }
        }
        let terminal = isatty(2) == 1 && !quiet
        importer.onProgress = { file, lines in
            if terminal { FileHandle.standardError.write(Data("\r\u{1B}[2K\(file): \(lines) lines".utf8)) }
        }
        var summaries: [ImportFileSummary] = []
        for (kind, file) in sorted {
            summaries.append(try await importer.importFile(file, as: kind))
            if terminal { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
        }
        return summaries
    }

    static func line(_ summary: ImportFileSummary) -> String {
        let skipped = summary.skipped.values.reduce(0, +)
        let reasons = summary.skipped.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let overLimit = summary.devicesOverLimit > 0 ? ", devices_over_limit \(summary.devicesOverLimit)" : ""
        return "\(summary.file): \(summary.kind.rawValue): \(summary.lines) lines, \(summary.written) new or changed, \(summary.unchanged) unchanged, \(skipped) skipped\(skipped > 0 ? " (\(reasons))" : "")\(overLimit)"
    }
}
