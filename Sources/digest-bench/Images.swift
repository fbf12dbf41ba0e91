import ArgumentParser
import DigestDemo
import DigestCore
import DigestImageCodecs
import DigestImages
import Foundation

/// `digest-bench images`: the drivers of scripts/bench-images.sh. `render` times renditions of local
/// files over several passes; `shared` has many users ask the attachment provider for few pictures.
struct Images: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Image benchmarks: renditions of local files, many users sharing few images.",
        subcommands: [Render.self, Shared.self])

    struct Shared: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Many users sharing few images: ask the attachment provider for each user's image, served on 127.0.0.1.",
            discussion: """
                User i asks for picture i mod the number of pictures, a batch of users at a time, as the weekly run \
                does. The pictures are the files of --pictures (`digest images samples --kind demo --count N` writes \
                the demo's). Prints downloads, server requests and time.
                """)

        @Option(help: "Users asking.")
        var users: Int = 100_000

        @Option(help: "A directory of pictures (JPEG, PNG or GIF files) to serve, one route each.")
        var pictures: String

        @Option(help: "Users asking at once (one batch).")
        var batch: Int = 1000

        @Option(help: "The attachments directory (files are written there).")
        var out: String

        func run() async throws {
            let directory = URL(fileURLWithPath: pictures)
            let names = try FileManager.default.contentsOfDirectory(atPath: pictures).filter { !$0.hasPrefix(".") }.sorted()
            guard !names.isEmpty else { throw ValidationError("no pictures in \(pictures)") }
            let routes = LoopbackRoutes()
            for name in names {
                let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
                let contentType = switch directory.appendingPathComponent(name).pathExtension.lowercased() {
                case "png": "image/png"
                case "gif": "image/gif"
                default: "image/jpeg"
                }
                routes["/i/\(name)"] = .ok(bytes, contentType: contentType)
            }
            let users = users, batch = batch
            var configuration = ImageAttachments.Configuration(directory: URL(fileURLWithPath: out), baseURL: "https://cdn.example/a")
            configuration.downloader.addressGuard = try AddressGuard(allowList: "127.0.0.1")
            let (ready, statistics, seconds) = try await LoopbackHTTPServer.serve(routes) { server in
                let urls = names.map { server.url("/i/\($0)") }
                let started = ContinuousClock.now
                let (ready, statistics) = try await ImageAttachments.with(configuration) { attachments in
                    var ready = 0
                    for first in stride(from: 0, to: users, by: batch) {
                        ready += await withTaskGroup(of: Int.self) { group in
                            for user in first..<min(users, first + batch) {
                                group.addTask {
                                    if case .ready = await attachments.renditions(forImageAt: urls[user % urls.count]) { return 1 }
                                    return 0
                                }
                            }
                            return await group.reduce(0, +)
                        }
                    }
                    return (ready, await attachments.statistics())
                }
                let elapsed = started.duration(to: .now)
                return (ready, statistics, elapsed.seconds)
            }
            let requests = routes.hits.values.reduce(0, +)
            print("users: \(users), distinct images: \(names.count), ready: \(ready)")
            print("downloads: \(statistics["downloads"] ?? 0), server requests: \(requests), fetched: \(statistics["fetched"] ?? 0), reused: \(statistics["reused"] ?? 0)")
            print(String(format: "time: %.2f s, %.0f users/s", seconds, Double(users) / seconds))
        }
    }

    struct Render: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Time the hero (and icon) renditions of local files over several passes (scripts/bench-images.sh).",
            discussion: "Files are named <source file name>.<rendition>.<ext> in --out. Exit status 1 if any file failed.")

        @Option(help: "Where the renditions go (omit to time without writing).")
        var out: String?

        @Option(help: "Renditions to make: hero, icon or hero,icon.")
        var renditions: String = "hero,icon"

        @Option(help: "Files rendered at once (on Swift's concurrency pool, so at most one per core).")
        var threads: Int = 1

        @Option(help: "Render the whole list this many times (timings are medians over the passes).")
        var passes: Int = 1

        @Flag(help: "Decode at full size even where a 1/2, 1/4 or 1/8 scale would do.")
        var noShrinkOnLoad = false

        @Argument(help: "JPEG, PNG or GIF files.")
        var files: [String]

        func validate() throws {
            guard threads >= 1, passes >= 1 else { throw ValidationError("--threads and --passes must be positive") }
            guard !renditions.split(separator: ",").isEmpty,
                renditions.split(separator: ",").allSatisfy({ $0 == "hero" || $0 == "icon" })
            else { throw ValidationError("--renditions takes hero, icon or hero,icon") }
        }

        func run() async throws {
            let specs = renditions.split(separator: ",").map { $0 == "hero" ? RenditionSpec.hero : RenditionSpec.icon }
            let (results, wall) = try await RenditionBatch.run(
                files: files, specs: specs, shrinkOnLoad: !noShrinkOnLoad, out: out, threads: threads, passes: passes)
            var all: [Double] = []
            for (result, file) in zip(results, files) {
                all += result.milliseconds
                print(String(format: "%@: median %.1f ms — %@", file, median(result.milliseconds), result.outcome))
            }
            let items = files.count * passes
            print(String(format: "total: %d files × %d passes, %d threads: %.0f ms wall, %.2f ms per image (wall ÷ images), median %.2f ms each, %.1f images/s",
                         files.count, passes, threads, wall, wall / Double(items), median(all), Double(items) * 1000 / wall))
            if results.contains(where: \.failed) { throw ExitCode(1) }
        }

        private func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            guard !sorted.isEmpty else { return 0 }
            return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
    }
}
