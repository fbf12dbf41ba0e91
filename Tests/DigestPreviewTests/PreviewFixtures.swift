import DigestPreview
import Foundation
import Testing

/// Fixture messages and pictures (Tests/DigestPreviewTests/Fixtures), and one renderer per test
/// thread set up to read them.
enum PreviewFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let goldens = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Goldens")
    static let attachmentsURL = "https://cdn.test/att"

    /// The fixture messages by name (`bigtext-pl`, `image-en`, `ios-image-zh`, `web-image-ru`, `default-ar`).
    static let names = ["bigtext-pl", "image-en", "ios-image-zh", "web-image-ru", "default-ar"]

    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent("\(name).json")))
    }

    static func message(_ name: String) throws -> PreviewMessage {
        try PreviewMessage(json: bytes(name))
    }

    static var configuration: PreviewRenderer.Configuration {
        PreviewRenderer.Configuration(
            images: PreviewImages(
                attachmentsDirectory: directory.appendingPathComponent("attachments").path, attachmentsURL: attachmentsURL,
                allowFileURLs: false))
    }

    /// A pool shared by the suites: renderers live on its threads.
    static let pool = PreviewPool(threads: 2, configuration: configuration)

    /// Renders `message` and expects the very previews of `expected` (another shape of the same plan's
    /// message, rendered before): the same states, pixels, texts and notes.
    static func expectSamePreviews(_ message: PreviewMessage, as expected: [RenderedPreview], of shape: String) async throws {
        let previews = try await pool.render(message, scale: 1)
        #expect(previews.map(\.state) == expected.map(\.state))
        for (actual, wanted) in zip(previews, expected) {
            let pixels = try #require(PixelImage(png: actual.png)), golden = try #require(PixelImage(png: wanted.png))
            #expect(pixels.width > 0 && pixels == golden, "\(actual.fileName) of the \(shape) differs from the FCM section's")
            #expect(actual.texts == wanted.texts && actual.notes == wanted.notes)
        }
    }

    /// A JSON request body from a Swift dictionary.
    static func json(_ object: [String: Any]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: object, options: [.withoutEscapingSlashes]))
    }

    /// An Android data message.
    static func android(title: String?, body: String?, type: String = "Default", imageURL: String? = nil) -> [UInt8] {
        var data: [String: Any] = ["type": type]
        if let title { data["title"] = title }
        if let body { data["body"] = body }
        if let imageURL { data["imageUrl"] = imageURL }
        return json(["message": ["token": "t", "android": ["data": data]]])
    }
}
