import ArgumentParser
import DigestCore
import DigestImport
import DigestStore
import Foundation

extension ReadersCommand {
    /// `digest readers export`: everything the store holds about readers (docs/008).
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Everything the store holds about readers, as JSON (docs/008).",
            discussion: """
                One JSON object a reader: reader, preferences, preference_changes, devices (tokens and keys in \
                full), reads, messages, picks, events, test_sends. Without --out, JSON Lines on stdout, a reader a \
                line; with --out DIR, DIR/<id>.json (the id percent-encoded where it holds anything but letters, \
                digits, '-', '_', '.'). An id the store does not hold is named on stderr, the others are exported, \
                and the exit status is 1.
                """)

        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The readers' ids.") var ids: [String]
        @Option(help: ArgumentHelp("Write one file a reader into this directory (made if missing).", valueName: "dir")) var out: String?

        func validate() throws {
            if ids.isEmpty { throw ValidationError("name at least one reader id") }
        }

        func run() async throws {
            if let out {
                do {
                    try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
                } catch {
                    throw exiting(ExitStatus.cannotCreate, "--out \(out): \(error.localizedDescription)")
                }
            }
            let ids = self.ids, out = self.out
            let missing = try await database.withStore(existing: true) { store in
                var missing: [String] = []
                for id in ids {
                    let found: Bool
                    if let out {
                        found = try await Self.export(id, from: store, toFileIn: out)
                    } else {
                        found = try await store.exportReader(id, into: ReaderExport { FileHandle.standardOutput.write(Data($0)) })
                    }
                    if !found { missing.append(id) }
                }
                return missing
            }
            for id in missing { FileHandle.standardError.write(Data("no reader '\(id)' in \(database.displayName)\n".utf8)) }
            if !missing.isEmpty { throw ExitCode(1) }
        }

        /// Exports `id` into `directory`/<name>.json through a temporary file renamed when complete, so
        /// that a file there is always a whole export; `false` (no file) when the store has no such reader.
        static func export(_ id: String, from store: any StoreOfReaders, toFileIn directory: String) async throws -> Bool {
            let path = (directory as NSString).appendingPathComponent(fileName(for: id))
            let partial = path + ".partial"
            guard FileManager.default.createFile(atPath: partial, contents: nil), let handle = FileHandle(forWritingAtPath: partial) else {
                throw exiting(ExitStatus.cannotCreate, "cannot create \(partial)")
            }
            let found: Bool
            do {
                defer { try? handle.close() }
                found = try await store.exportReader(id, into: ReaderExport { try handle.write(contentsOf: $0) })
            } catch {
                try? FileManager.default.removeItem(atPath: partial)
                throw error
            }
            guard found else {
                try? FileManager.default.removeItem(atPath: partial)
                return false
            }
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            try FileManager.default.moveItem(atPath: partial, toPath: path)
            return true
        }

        /// `<id>.json`, the id percent-encoded (UTF-8 bytes, `%XX` upper case) where it holds anything
        /// but ASCII letters, digits, `-`, `_` and `.` (so no id names a path elsewhere, and two ids
        /// never share a file).
        static func fileName(for id: String) -> String {
            var name = ""
            for byte in id.utf8 {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                    name.append(Character(UnicodeScalar(byte)))
                default:
                    name += (byte < 16 ? "%0" : "%") + String(byte, radix: 16, uppercase: true)
                }
            }
            return name + ".json"
        }
    }

    /// `digest readers forget`: every row about readers removed for good (docs/008).
    struct Forget: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove every row about readers, for good (docs/008).",
            discussion: """
                Readers, their preferences and changes, devices (and the dead-token entries of their tokens), \
                reads, messages in every state (a message being sent is taken from its sender), picks, events \
                and test sends; a transaction every \(batchSize) readers, so a crash leaves each reader whole or \
                gone. SQLite: deleted with secure_delete on, then a TRUNCATE checkpoint empties the -wal (waiting \
                up to 60 s for other processes' readers; exit 75 if it cannot: the rows are gone, the bytes not \
                yet). PostgreSQL: what is left to the operator (VACUUM, WAL and backups, the publisher's own \
                views) is printed once on stderr. An id the store does not hold is listed, not an error. A later \
                import that lists a reader again brings them back as new.
                """)

        /// Readers a transaction.
        static let batchSize = 500

        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The readers' ids.") var ids: [String] = []
        @Option(help: ArgumentHelp("A file of reader ids, one a line.", valueName: "path")) var file: String?
        @Flag(help: "Count what would be removed; remove nothing.") var dryRun = false
        @Flag(help: "Print {\"readers\", \"unknown\", \"removed\"} as JSON.") var json = false

        func validate() throws {
            if ids.isEmpty == (file == nil) { throw ValidationError("name the readers' ids or --file, one of the two") }
        }

        func run() async throws {
            let lines = try file.map { try IDLines(path: $0) }
            let ids = self.ids, dryRun = self.dryRun
            let started = Date()
            let (outcome, residue) = try await database.withStore(existing: true) { store in
                var outcome = ForgetOutcome()
                var batch: [String] = []
                func flush() async throws {
                    guard !batch.isEmpty else { return }
                    outcome.add(try await store.forgetReaders(batch, dryRun: dryRun))
                    batch.removeAll(keepingCapacity: true)
                    if lines != nil {
                        let seconds = Date().timeIntervalSince(started)
                        FileHandle.standardError.write(
                            Data("\(dryRun ? "counted" : "forgot") \(outcome.readers) readers (\(outcome.unknown.count) unknown), \(String(format: "%.1f", seconds)) s\n".utf8))
                    }
                }
                var given = ids.makeIterator()
                while let id = try lines?.next() ?? given.next() {
                    batch.append(id)
                    if batch.count == Self.batchSize { try await flush() }
                }
                try await flush()
                let residue = dryRun ? nil : try await store.finishForgetting(wait: .seconds(60))
                return (outcome, residue)
            }
            var advice: [String] = []
            if case .advice(let lines) = residue { advice = lines }
            if json {
                print(Self.json(outcome, advice: advice))
            } else {
                print(Self.text(outcome, dryRun: dryRun))
            }
            if !advice.isEmpty { FileHandle.standardError.write(Data(advice.map { "note: \($0)\n" }.joined().utf8)) }
            if case .walNotTruncated(let busy) = residue {
                throw exiting(
                    ExitStatus.unavailable,
                    "the rows are gone but their bytes are not yet: the -wal could not be emptied in \(busy) (another process is reading \(database.displayName)); run the command again once it has ended (with no ids: `digest readers forget --db DB --file /dev/null`)")
            }
        }

        static func text(_ outcome: ForgetOutcome, dryRun: Bool) -> String {
            var lines = ["\(dryRun ? "would forget" : "forgot") \(outcome.readers) reader\(outcome.readers == 1 ? "" : "s")"]
            for (table, rows) in outcome.removed.sorted(by: { $0.key < $1.key }) {
                lines.append("  \(table): \(rows) row\(rows == 1 ? "" : "s")\(dryRun ? " to remove" : " removed")")
            }
            if !outcome.unknown.isEmpty {
                lines.append("unknown (\(outcome.unknown.count)): \(outcome.unknown.prefix(20).joined(separator: ", "))\(outcome.unknown.count > 20 ? ", …" : "")")
            }
            return lines.joined(separator: "\n")
        }

        static func json(_ outcome: ForgetOutcome, advice: [String]) -> String {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("readers", outcome.readers)
            writer.key("unknown")
            writer.beginArray()
            for id in outcome.unknown { writer.value(id) }
            writer.endArray()
            writer.key("removed")
            writer.beginObject()
            for (table, rows) in outcome.removed.sorted(by: { $0.key < $1.key }) { writer.field(table, rows) }
            writer.endObject()
            if !advice.isEmpty {
                writer.key("advice")
                writer.beginArray()
                for line in advice { writer.value(line) }
                writer.endArray()
            }
            writer.endObject()
            return writer.string
        }
    }
}

/// Says `message` on stderr as an error and gives the exit status to throw.
private func exiting(_ status: ExitCode, _ message: String) -> ExitCode {
    FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    return status
}

/// The reader ids of `--file`, one a line (surrounding spaces trimmed, empty lines skipped), read
/// through a fixed buffer however long the file.
final class IDLines {
    private let reader: LineReader
    private var number = 0

    init(path: String) throws {
        do { reader = try LineReader(path: path, maxLineBytes: 4096) } catch { throw CommandError("--file \(error)") }
    }

    func next() throws -> String? {
        while let line = try reader.next() {
            number += 1
            switch line {
            case .tooLong(let length):
                throw CommandError("--file \(reader.path), line \(number): \(length) bytes, too long for a reader id")
            case .bytes(let bytes):
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw CommandError("--file \(reader.path), line \(number): not UTF-8")
                }
                let id = text.trimmingCharacters(in: .whitespaces)
                if !id.isEmpty { return id }
            }
        }
        return nil
    }
}
