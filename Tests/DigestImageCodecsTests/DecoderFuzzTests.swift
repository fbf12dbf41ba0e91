import DigestCore
import DigestDemo
@testable import DigestImageCodecs
import DigestTesting
import Foundation
import Testing

/// A bounded, seeded mutation fuzzer over the decoders (the libFuzzer target in
/// `Sources/DigestImagesFuzz` runs the same entry for longer), and a replay of the committed corpus.
@Suite struct DecoderFuzzTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Corpus/fuzz")

    static let maker: RenditionMaker = {
        var configuration = RenditionMaker.Configuration()
        configuration.maxPixels = 1_000_000
        configuration.maxDecoderMemory = 64 << 20
        return RenditionMaker(configuration: configuration)
    }()

    static let specs = [
        RenditionSpec(name: "hero", width: 64, height: 32, maxBytes: 1_000_000, passesGIFThrough: true),
        RenditionSpec(name: "icon", width: 16, height: 16, maxBytes: 1_000_000),
    ]

    static func seeds() throws -> [[UInt8]] {
        let photo = SamplePictures.photo(width: 40, height: 24, seed: 1)
        var seeds: [[UInt8]] = [
            try SamplePictures.jpeg(photo),
            try SamplePictures.jpeg(photo, progressive: true),
            try SamplePictures.jpeg(photo, orientation: 6),
            try JPEGDecodingTests.encode(JPEGDecodingTests.quadrants(width: 24, height: 16), layout: .cmykAsYCCK),
            try JPEGDecodingTests.encode(JPEGDecodingTests.quadrants(width: 24, height: 16), layout: .gray),
            try SamplePictures.png(SamplePictures.logo(width: 20, height: 20, seed: 2)),
            try SamplePictures.palettePNG(SamplePictures.logo(width: 20, height: 12, seed: 3), keepAlpha: true),
            ImageBytes.gif(width: 10, height: 10),
        ]
        seeds.append(PNGFixture.make(width: 9, height: 7, colorType: .gray, bitDepth: 2, interlaced: true) { x, y in [(x + y) % 4] })
        seeds.append(PNGFixture.make(width: 9, height: 7, colorType: .rgba, bitDepth: 16) { x, y in [x * 7000, y * 9000, 100, 65535] })
        return seeds
    }

    @Test func mutatedImagesNeverCrashOrHang() throws {
        var seed = UInt64(0xD16E57)
        if let fixed = ProcessInfo.processInfo.environment["DIGEST_FUZZ_SEED"].flatMap(UInt64.init) { seed = fixed }
        var rng = Mutator(seed: seed)
        let seeds = try Self.seeds()
        let deadline = ContinuousClock.now + .seconds(4)
        var runs = 0, accepted = 0
        var reasons: [String: Int] = [:]
        while runs < 20_000, ContinuousClock.now < deadline {
            let input = rng.mutate(seeds[rng.below(seeds.count)])
            let started = ContinuousClock.now
            do {
                _ = try Self.maker.render(input, specs: Self.specs)
                accepted += 1
            } catch {
                reasons[error.reason, default: 0] += 1
            }
            #expect(started.duration(to: .now) < .seconds(2), "one input took too long (seed \(seed), run \(runs))")
            runs += 1
        }
        #expect(runs > 100, "only \(runs) inputs in the time box")
        #expect(accepted > 0 && !reasons.isEmpty, "accepted \(accepted), rejected \(reasons)")
    }

    @Test func theRegressionCorpusReplays() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).filter { !$0.hasPrefix(".") }
        #expect(files.count >= 9)
        for name in files {
            let bytes = [UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(name)))
            _ = try? Self.maker.render(bytes, specs: Self.specs)
        }
    }
}

/// Seeded byte-level mutations: bit flips, interesting bytes, truncation, duplication, insertion.
struct Mutator {
    private var random: SplitMix64

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    mutating func next() -> UInt64 { random.next() }

    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(1, n))) }

    mutating func mutate(_ input: [UInt8]) -> [UInt8] {
        var bytes = input
        for _ in 0..<(1 + below(6)) where !bytes.isEmpty {
            let at = below(bytes.count)
            switch below(7) {
            case 0: bytes[at] ^= UInt8(1 << below(8))
            case 1: bytes[at] = [0x00, 0xFF, 0x7F, 0x80, 0x01, 0xFE][below(6)]
            case 2: bytes[at] = UInt8(truncatingIfNeeded: next())
            case 3: bytes.removeSubrange(at...)
            case 4:
                let length = min(bytes.count - at, 1 + below(64))
                bytes.insert(contentsOf: bytes[at..<at + length], at: below(bytes.count))
            case 5: bytes.insert(contentsOf: (0..<(1 + below(16))).map { _ in UInt8(truncatingIfNeeded: next()) }, at: at)
            default:
                // A 16-bit field (sizes, lengths) set to an extreme.
                if at + 1 < bytes.count {
                    let value = [0, 1, 0xFFFF, 0x8000, 0x7FFF][below(5)]
                    bytes[at] = UInt8(value >> 8)
                    bytes[at + 1] = UInt8(value & 0xFF)
                }
            }
        }
        return bytes
    }
}
