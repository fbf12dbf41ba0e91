import DigestCore
import DigestPreview
import Foundation
import Testing

/// Every fixture message, every surface and state, at 1×, against the committed goldens.
///
/// A pixel differs when a channel is off by more than `tolerance`; a surface passes when under 0.5% of
/// its pixels differ (font builds and anti-aliasing move a few edge pixels). On failure the actual PNG
/// and a diff image (differences in red) are written to `$TMPDIR/digest-golden-failures/`.
/// `DIGEST_RECORD_GOLDENS=1 swift test --filter GoldenPreviewTests` writes new goldens.
@Suite struct GoldenPreviewTests {
    static let tolerance: UInt8 = 40
    static let allowedFraction = 0.005
    static let record = ProcessInfo.processInfo.environment["DIGEST_RECORD_GOLDENS"] == "1"

    @Test(arguments: PreviewFixtures.names)
    func fixtureMatchesGoldens(_ name: String) async throws {
        let message = try PreviewFixtures.message(name)
        let previews = try await PreviewFixtures.pool.render(message, scale: 1)
        #expect(previews.count == message.contents.count * 2)
        for preview in previews {
            let file = "\(name)-\(preview.platform.rawValue)-\(preview.state.rawValue).png"
            let golden = PreviewFixtures.goldens.appendingPathComponent(file)
            if Self.record {
                try FileManager.default.createDirectory(at: PreviewFixtures.goldens, withIntermediateDirectories: true)
                try Data(preview.png).write(to: golden)
                continue
            }
            let expectedBytes = try #require(
                try? Data(contentsOf: golden), "missing golden \(file): run with DIGEST_RECORD_GOLDENS=1")
            let expected = try #require(PixelImage(png: Array(expectedBytes)))
            let actual = try #require(PixelImage(png: preview.png))
            let failures = FileManager.default.temporaryDirectory.appendingPathComponent("digest-golden-failures")
            guard let (differing, diff) = actual.difference(from: expected, tolerance: Self.tolerance) else {
                try FileManager.default.createDirectory(at: failures, withIntermediateDirectories: true)
                try Data(preview.png).write(to: failures.appendingPathComponent(file))
                Issue.record("\(file): size \(actual.width)×\(actual.height), golden \(expected.width)×\(expected.height); actual in \(failures.path)")
                continue
            }
            let fraction = Double(differing) / Double(actual.pixels.count)
            if fraction > Self.allowedFraction {
                try FileManager.default.createDirectory(at: failures, withIntermediateDirectories: true)
                try Data(preview.png).write(to: failures.appendingPathComponent(file))
                try Data(diff.png()).write(to: failures.appendingPathComponent(file.replacingOccurrences(of: ".png", with: "-diff.png")))
                Issue.record("\(file): \(differing) pixels differ (\(String(format: "%.2f", fraction * 100))%); actual and diff in \(failures.path)")
            }
        }
    }

    @Test func scaleMultipliesPixelsAndKeepsTheLines() async throws {
        let message = try PreviewFixtures.message("bigtext-pl")
        let content = try #require(message.content(for: .android))
        let one = try await PreviewFixtures.pool.render(content, state: .expanded, scale: 1)
        let three = try await PreviewFixtures.pool.render(content, state: .expanded, scale: 3)
        #expect(three.pixelWidth == one.pixelWidth * 3)
        #expect(three.pixelHeight == one.pixelHeight * 3)
        #expect(three.texts == one.texts)
    }

    @Test func theSameMessageRendersTheSameBytes() async throws {
        let content = try #require(try PreviewFixtures.message("image-en").content(for: .android))
        let first = try await PreviewFixtures.pool.render(content, state: .collapsed, scale: 2)
        let second = try await PreviewFixtures.pool.render(content, state: .collapsed, scale: 2)
        #expect(first.png == second.png)
    }
}
