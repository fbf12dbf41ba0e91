package import DigestCore
package import DigestPreview
package import DigestStore
package import Foundation

/// Which readers a template comparison composes.
package enum ComparedReaders: Sendable {
    /// Every user of the store.
    case all
    /// A stable sample of this size (``ReaderSample``).
    case sample(Int)
    /// These user ids, in this order (`--users FILE`).
    case ids([String])
}

extension TemplateComparison {
    /// Compares `readers` a page at a time and hands each changed message, drawn with both folders,
    /// to `output` in reader order; unchanged messages are counted, never drawn. Memory stays that of
    /// one page of readers and their changed messages' PNGs, whatever the store holds.
    package func run(
        _ readers: ComparedReaders, budget: Int, pool: PreviewPool, scale: Int, pageSize: Int = 200, output: ComparisonFiles
    ) async throws -> ComparisonTotals {
        let composers = try await composers()
        var totals = ComparisonTotals()
        func compare(_ users: [StoredReader]) async throws {
            let compared = try await compose(users, with: composers)
            totals.readers += compared.count
            var changed: [MessageComparison] = []
            for reader in compared {
                let messages = reader.messages(budget: budget)
                totals.addPreferences(of: reader, messages: messages)
                for message in messages {
                    if message.changed { changed.append(message) } else { totals.addUnchanged() }
                }
            }
            for entry in try await Self.render(changed, pool: pool, scale: scale, first: output.count, directory: output.directory) {
                totals.add(entry)
                try output.write(entry)
            }
        }
        func compareIDs(_ ids: [String]) async throws {
            for start in stride(from: 0, to: ids.count, by: pageSize) {
                let (users, missing) = try await self.users(ids: Array(ids[start..<min(ids.count, start + pageSize)]))
                for id in missing {
                    let entry = ComparisonEntry.missing(user: id)
                    totals.add(entry)
                    try output.write(entry)
                }
                try await compare(users)
            }
        }
        switch readers {
        case .all:
            try await forEachPage(size: pageSize) { try await compare($0) }
        case .sample(let size):
            let chosen = try await sample(size: size, pageSize: pageSize, composers: composers)
            output.sample = chosen
            try await compareIDs(chosen)
        case .ids(let ids):
            try await compareIDs(ids)
        }
        try output.finish(totals)
        return totals
    }

    /// Draws the changed messages of a page side by side, a few at a time on the pool's threads, into
    /// `directory/png/` as `<entry number>-<platform>-<old|new>-<state>.png`; entries in the order given.
    static func render(
        _ changed: [MessageComparison], pool: PreviewPool, scale: Int, first: Int, directory: URL
    ) async throws -> [ComparisonEntry] {
        try await withThrowingTaskGroup(of: (Int, ComparisonEntry).self) { group in
            for (offset, message) in changed.enumerated() {
                group.addTask {
                    let number = first + offset
                    let entry = try await ComparisonEntry.render(message, pool: pool, scale: scale) { side, preview in
                        let name = "png/\(number)-\(preview.platform.rawValue)-\(side)-\(preview.state.rawValue).png"
                        try Data(preview.png).write(to: directory.appendingPathComponent(name))
                        return name
                    }
                    return (offset, entry)
                }
            }
            var entries = [ComparisonEntry?](repeating: nil, count: changed.count)
            for try await (offset, entry) in group { entries[offset] = entry }
            return entries.compactMap { $0 }
        }
    }
}

/// Writes a template comparison into a directory as it goes: `compare.json` (the changed messages,
/// one entry a line, then the totals) and `index.html` (the totals, then every changed message's old
/// and new PNGs side by side with the changed lines marked), PNGs under `png/`. Entries go to disk at
/// once, so a comparison of any size holds none of them.
package final class ComparisonFiles {
    package let directory: URL
    /// Entries written so far.
    package private(set) var count = 0
    /// The readers a sample chose, in hash order (`compare.json`'s `sample`); `nil` otherwise.
    package var sample: [String]?
    let week: String, oldFolder: String, newFolder: String
    private let json: FileHandle
    private let sections: FileHandle
    private let sectionsURL: URL

    package init(directory: URL, week: String, old: URL, new: URL) throws {
        self.directory = directory
        self.week = week
        oldFolder = old.path
        newFolder = new.path
        let fm = FileManager.default
        try fm.createDirectory(at: directory.appendingPathComponent("png"), withIntermediateDirectories: true)
        func open(_ name: String) throws -> FileHandle {
            let url = directory.appendingPathComponent(name)
            guard fm.createFile(atPath: url.path, contents: nil) else { throw ComparisonFilesError(path: url.path) }
            return try FileHandle(forWritingTo: url)
        }
        json = try open("compare.json.partial")
        sectionsURL = directory.appendingPathComponent("index.html.partial")
        sections = try open("index.html.partial")
        try json.write(contentsOf: Data("{\"entries\":[".utf8))
    }

    /// Appends one entry to both files.
    package func write(_ entry: ComparisonEntry) throws {
        try json.write(contentsOf: Data(((count == 0 ? "\n" : ",\n") + Self.line(entry)).utf8))
        try sections.write(contentsOf: Data(ComparisonHTML.section(entry, number: count).utf8))
        count += 1
    }

    /// Ends both files with the totals: `compare.json` and `index.html` appear whole, or not at all.
    package func finish(_ totals: ComparisonTotals) throws {
        let encoder = Self.encoder()
        func string(_ value: some Encodable) throws -> String { String(decoding: try encoder.encode(value), as: UTF8.self) }
        let tail = "\n],\"new\":\(try string(newFolder)),\"old\":\(try string(oldFolder)),\(try sample.map { "\"sample\":\(try string($0))," } ?? "")\"totals\":\(try string(totals)),\"week\":\(try string(week))}\n"
        try json.write(contentsOf: Data(tail.utf8))
        try json.close()
        try sections.close()
        let fm = FileManager.default
        let index = directory.appendingPathComponent("index.html.tmp")
        _ = fm.createFile(atPath: index.path, contents: nil)
        let html = try FileHandle(forWritingTo: index)
        try html.write(contentsOf: Data(ComparisonHTML.head(week: week, old: oldFolder, new: newFolder, totals: totals).utf8))
        let body = try FileHandle(forReadingFrom: sectionsURL)
        while let chunk = try body.read(upToCount: 1 << 20), !chunk.isEmpty { try html.write(contentsOf: chunk) }
        try body.close()
        try html.write(contentsOf: Data(ComparisonHTML.tail.utf8))
        try html.close()
        try? fm.removeItem(at: sectionsURL)
        for (from, to) in [("compare.json.partial", "compare.json"), ("index.html.tmp", "index.html")] {
            let target = directory.appendingPathComponent(to)
            try? fm.removeItem(at: target)
            try fm.moveItem(at: directory.appendingPathComponent(from), to: target)
        }
    }

    /// Sorted keys, no escaped slashes: the same entry is the same line on every run.
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    static func line(_ entry: ComparisonEntry) -> String {
        String(decoding: (try? encoder().encode(entry)) ?? Data("{}".utf8), as: UTF8.self)
    }
}

/// A comparison's output file could not be created.
struct ComparisonFilesError: Error, CustomStringConvertible {
    var path: String
    var description: String { "\(path): cannot be created" }
}
