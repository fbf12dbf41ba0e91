import DigestTesting
import Foundation
import Testing

/// `make demo` shows what devices get: its previews draw the renditions the run made, never a
/// placeholder for a picture that exists.
@Suite struct DemoPreviewTests {
    @Test func demoPreviewsDrawTheRunsOwnPictures() throws {
        let dir = try TemporaryDirectory()
        let demo = try DigestBinary.run(["demo", "--out", dir.path("demo"), "--users", "200", "--week", "2026-W46"])
        #expect(demo.status == 0, "\(demo.stderr)")
        let previews = dir.url.appendingPathComponent("demo/previews")
        var imagePreviews = 0
        for user in try FileManager.default.contentsOfDirectory(atPath: previews.path) {
            let data = try Data(contentsOf: previews.appendingPathComponent("\(user)/preview.json"))
            let sidecar = try JSONSerialization.jsonObject(with: data) as! [String: Any]
            guard sidecar["variant"] as? String == "Image" else { continue }
            for preview in sidecar["previews"] as! [[String: Any]] {
                imagePreviews += 1
                let notes = preview["notes"] as? [String] ?? []
                #expect(!notes.contains { $0.contains("image not readable") }, "\(user): \(notes)")
            }
        }
        #expect(imagePreviews > 0, "the demo previews at least one Image message")
    }
}
