import ArgumentParser
import DigestDemo
import DigestImageCodecs
import DigestImages
import Foundation

/// `digest images`: the image pipeline on local files, for checking pictures; sample pictures. (The
/// image benchmarks' drivers are `digest-bench images render|shared`.)
struct ImagesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "images",
        abstract: "Make renditions of local image files, or write sample pictures.",
        subcommands: [Render.self, Samples.self])

    struct Render: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make the hero (and icon) renditions of local files; prints the time per file.",
            discussion: "Files are named <source file name>.<rendition>.<ext> in --out. Exit status 1 if any file failed.")

        @Option(help: "Where the renditions go (omit to time without writing).")
        var out: String?

        @Option(help: "Renditions to make: hero, icon or hero,icon.")
        var renditions: String = "hero,icon"

        @Option(help: "Files rendered at once (on Swift's concurrency pool, so at most one per core).")
        var threads: Int = 1

        @Flag(help: "Decode at full size even where a 1/2, 1/4 or 1/8 scale would do.")
        var noShrinkOnLoad = false

        @Argument(help: "JPEG, PNG or GIF files.")
        var files: [String]

        func validate() throws {
            guard threads >= 1 else { throw ValidationError("--threads must be positive") }
            guard !renditions.split(separator: ",").isEmpty,
                renditions.split(separator: ",").allSatisfy({ $0 == "hero" || $0 == "icon" })
            else { throw ValidationError("--renditions takes hero, icon or hero,icon") }
        }

        func run() async throws {
            let specs = renditions.split(separator: ",").map { $0 == "hero" ? RenditionSpec.hero : RenditionSpec.icon }
            let (results, wall) = try await RenditionBatch.run(
                files: files, specs: specs, shrinkOnLoad: !noShrinkOnLoad, out: out, threads: threads)
            for (result, file) in zip(results, files) {
                print(String(format: "%@: %.1f ms — %@", file, result.milliseconds.first ?? 0, result.outcome))
            }
            print(String(format: "total: %d files, %d threads: %.0f ms wall, %.2f ms per image (wall ÷ images)",
                         files.count, threads, wall, wall / Double(files.count)))
            if results.contains(where: \.failed) { throw ExitCode(1) }
        }
    }

    struct Samples: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write generated sample pictures: the benchmark corpus, the demo's pictures, or small fuzzing seeds.")

        @Option(help: "Directory to write to.")
        var out: String

        @Option(help: "'bench' (large and medium photos as baseline and progressive JPEG, RGBA and palette PNGs), 'demo' (the pictures `digest demo` serves) or 'seeds'.")
        var kind: String = "bench"

        @Option(help: "Pictures of each sort (bench), or pictures in all (demo).")
        var count: Int = 3

        func run() throws {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            var written: [(String, [UInt8])] = []
            switch kind {
            case "bench":
                for i in 0..<count {
                    let seed = UInt64(100 + i)
                    let large = SamplePictures.photo(width: 4000, height: 3000, seed: seed)
                    written.append(("large-\(i + 1)-baseline.jpg", try SamplePictures.jpeg(large, quality: 90)))
                    written.append(("large-\(i + 1)-progressive.jpg", try SamplePictures.jpeg(large, quality: 90, progressive: true)))
                    let medium = SamplePictures.photo(width: 1600, height: 1200, seed: seed + 50)
                    written.append(("medium-\(i + 1)-baseline.jpg", try SamplePictures.jpeg(medium, quality: 90)))
                    written.append(("medium-\(i + 1)-progressive.jpg", try SamplePictures.jpeg(medium, quality: 90, progressive: true)))
                    var rgba = SamplePictures.photo(width: 1600, height: 1200, seed: seed + 70)
                    let logo = SamplePictures.logo(width: 1600, height: 1200, seed: seed)
                    for p in 0..<(rgba.width * rgba.height) { rgba.bytes[p * 4 + 3] = max(logo.bytes[p * 4 + 3], 40) }
                    written.append(("medium-\(i + 1)-rgba.png", try SamplePictures.png(rgba)))
                    let palette = SamplePictures.photo(width: 1600, height: 1200, seed: seed + 90)
                    written.append(("medium-\(i + 1)-palette.png", try SamplePictures.palettePNG(palette)))
                }
            case "demo":
                written = try SamplePictures.demo(count: count).map { ($0.name, $0.bytes) }
            case "seeds":
                let photo = SamplePictures.photo(width: 40, height: 24, seed: 1)
                let logo = SamplePictures.logo(width: 24, height: 24, seed: 2)
                written = [
                    ("baseline.jpg", try SamplePictures.jpeg(photo)),
                    ("progressive.jpg", try SamplePictures.jpeg(photo, progressive: true)),
                    ("orientation-6.jpg", try SamplePictures.jpeg(photo, orientation: 6)),
                    ("orientation-3.jpg", try SamplePictures.jpeg(photo, progressive: true, orientation: 3)),
                    ("rgba.png", try SamplePictures.png(logo)),
                    ("rgb.png", try SamplePictures.png(photo, opaque: true)),
                    ("palette.png", try SamplePictures.palettePNG(photo)),
                    ("palette-trns.png", try SamplePictures.palettePNG(logo, keepAlpha: true)),
                    ("tiny.gif", Array("GIF89a".utf8) + [10, 0, 10, 0, 0x80, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3B]),
                ]
            default:
                throw ValidationError("--kind takes bench, demo or seeds")
            }
            for (name, bytes) in written {
                try Data(bytes).write(to: URL(fileURLWithPath: out).appendingPathComponent(name))
            }
            print("wrote \(written.count) files to \(out)")
        }
    }
}
