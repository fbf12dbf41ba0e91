import DigestPreview
import DigestCore
import Foundation

// Time per PNG (layout, drawing and PNG encoding) for each surface and state, on one thread.
// Usage: PreviewBenchmark FIXTURES_DIR [ITERATIONS] [SCALE]; prints one TSV line per surface.
let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: PreviewBenchmark FIXTURES_DIR [ITERATIONS] [SCALE]\n".utf8))
    exit(2)
}
let fixtures = URL(fileURLWithPath: arguments[1])
let iterations = arguments.count > 2 ? Int(arguments[2]) ?? 200 : 200
let scale = arguments.count > 3 ? Int(arguments[3]) ?? 3 : 3
let cases: [(String, String)] = [
    ("Android BigText", "bigtext-pl"), ("Android BigPicture", "image-en"), ("Android Default (RTL)", "default-ar"),
    ("iOS lock screen (CJK, image)", "ios-image-zh"), ("Chrome (image)", "web-image-ru"),
]
let renderer = PreviewRenderer(
    configuration: .init(
        images: PreviewImages(
            attachmentsDirectory: fixtures.appendingPathComponent("attachments").path,
            attachmentsURL: "https://cdn.test/att")))
let firstStart = ContinuousClock.now
_ = try renderer.render(NotificationContent(platform: .android, title: "warm", body: "up"), state: .collapsed, scale: scale)
let first = firstStart.duration(to: .now)
print("first\t\(String(format: "%.2f", first.seconds * 1000))")
for (name, file) in cases {
    let message = try PreviewMessage(json: Array(try Data(contentsOf: fixtures.appendingPathComponent("\(file).json"))))
    let content = message.contents[0]
    for state in PreviewState.allCases {
        for _ in 0..<5 { _ = try renderer.render(content, state: state, scale: scale) }
        var samples: [Double] = []
        var bytes = 0
        var size = ""
        for _ in 0..<iterations {
            let start = ContinuousClock.now
            let preview = try renderer.render(content, state: state, scale: scale)
            let elapsed = start.duration(to: .now)
            samples.append(elapsed.seconds * 1000)
            bytes = preview.png.count
            size = "\(preview.pixelWidth)x\(preview.pixelHeight)"
        }
        samples.sort()
        let median = samples[samples.count / 2]
        let p95 = samples[min(samples.count - 1, samples.count * 95 / 100)]
        print("\(name)\t\(state.rawValue)\t\(size)\t\(String(format: "%.2f", median))\t\(String(format: "%.2f", p95))\t\(bytes)")
    }
}
