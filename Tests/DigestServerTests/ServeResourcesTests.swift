import DigestSQLite
import DigestTesting
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `digest serve` as a process: once its pages have been shown, previews borrow what the process holds
/// (the store's connections, the render threads, the templates read once) and start or open nothing.
@Suite struct ServeResourcesTests {
    /// The process's threads and the files it holds open (sockets aside: every request is a connection).
    struct Held: Equatable {
        /// Thread id and name (`?` once it has ended).
        var threads: [String]
        var files: [String]

        init(pid: Int32) throws {
            threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").map { task in
                let name = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8)) ?? "?"
                return "\(task) \(name.trimmingCharacters(in: .whitespacesAndNewlines))"
            }.sorted()
            files = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap { fd in
                let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)")) ?? "?"
                return target.hasPrefix("socket:") ? nil : target
            }.sorted()
        }
    }

    /// `tid name` → name.
    static func name(_ thread: String) -> String { thread.split(separator: " ", maxSplits: 1).last.map(String.init) ?? "" }

    /// Threads the program names: the store's connections and the renderers.
    static func isOurs(_ thread: String) -> Bool {
        let name = name(thread)
        return name.hasPrefix("sqlite-") || name.hasPrefix("preview-")
    }

    static func get(_ url: String) async throws -> Data {
        let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200 else { throw Failure(url: url, status: status) }
        return data
    }

    struct Failure: Error { var url: String; var status: Int }

    final class SampleCount: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    @Test func twentyConcurrentPreviewsStartNoThreadAndOpenNoFile() async throws {
        let dir = try TemporaryDirectory()
        let database = try await FixtureDatabase.make(in: dir)
        await database.close()
        let serve = try DigestBinary.start(
            ["serve", "--db", database.path, "--port", "0", "--db-connections", "2"], name: "serve", in: dir.url)
        defer { serve.kill() }
        // The port, from the line it prints once it listens.
        var port: Int?
        for _ in 0..<600 where port == nil {
            let out = (try? String(contentsOfFile: serve.stdoutPath, encoding: .utf8)) ?? ""
            if let range = out.range(of: #"127\.0\.0\.1:(\d+)/"#, options: .regularExpression) {
                port = Int(out[range].dropFirst("127.0.0.1:".count).dropLast())
            }
            if port == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let base = "http://127.0.0.1:\(try #require(port, "serve printed no port: \((try? String(contentsOfFile: serve.stderrPath, encoding: .utf8)) ?? "")"))"
        let users = ["u-pl", "u-zh", "u-mars", "u-quiet", "u-out"]
        let pages = users.map { "\(base)/api/preview?user=\($0)&week=\(FixtureDatabase.week)" } + ["\(base)/api/users?q=u-"]
        // The first showing of each page opens what the process keeps: the store, fonts, the templates.
        var pictures: [String] = []
        for page in pages {
            let body = try await Self.get(page)
            let json = try JSONSerialization.jsonObject(with: body) as? [String: Any]
            for surface in json?["surfaces"] as? [[String: Any]] ?? [] {
                if let image = surface["image"] as? String { pictures.append("\(base)/\(image)") }
            }
        }
        #expect(!pictures.isEmpty)
        let pid = serve.process.processIdentifier
        let before = try Held(pid: pid)

        // 20 requests at once, while the process's threads and files are read every millisecond.
        let requests = (0..<20).map { pages[$0 % pages.count] } + pictures
        let sampleCount = SampleCount()
        let sampling = Task {
            var seen: [Held] = []
            while !Task.isCancelled {
                if let held = try? Held(pid: pid) {
                    seen.append(held)
                    sampleCount.add()
                }
                try? await Task.sleep(for: .milliseconds(1))
            }
            return seen
        }
        // Rounds of 20 at once until the sampler has looked often enough (a busy machine samples less).
        for _ in 0..<20 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for url in requests { group.addTask { _ = try await Self.get(url) } }
                try await group.waitForAll()
            }
            if sampleCount.value >= 20 { break }
        }
        sampling.cancel()
        let seen = await sampling.value
        #expect(seen.count >= 20)
        // No file opened, and no second descriptor of one held (a new connection to the store would be).
        for held in seen {
            let counts = Dictionary(held.files.map { ($0, 1) }, uniquingKeysWith: +)
            let known = Dictionary(before.files.map { ($0, 1) }, uniquingKeysWith: +)
            let more = counts.filter { $0.value > known[$0.key, default: 0] }
            #expect(more.isEmpty, "opened during the requests: \(more)")
            if !more.isEmpty { break }
        }
        // The program's threads (the store's connections, the renderers) are the same ones throughout,
        // and no thread of the program's is started. Any other new thread is a worker of libdispatch,
        // which runs timers (Task.sleep) on Linux and starts and ends its workers as they fire; a new
        // worker briefly shows the name of the thread that started it.
        let ours = { (threads: [String]) in threads.filter { Self.isOurs($0) } }
        #expect(!ours(before.threads).isEmpty)
        for held in seen {
            let started = Set(ours(held.threads)).subtracting(ours(before.threads))
                .filter { thread in !before.threads.contains { $0.hasSuffix(" " + Self.name(thread)) } }
            #expect(started.isEmpty, "threads of the program started during the requests: \(started.sorted())")
            #expect(Set(ours(before.threads)).isSubset(of: held.threads), "\(ours(before.threads)) → \(ours(held.threads))")
            if !started.isEmpty { break }
        }
        // The store: one writer and the two readers asked for, each with its database file open once.
        #expect(before.files.filter { $0 == database.path }.count == 3, "\(before.files)")
    }
}
