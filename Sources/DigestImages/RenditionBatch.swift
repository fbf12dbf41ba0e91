package import DigestImageCodecs
import Foundation

/// Renditions of local files, `threads` at a time, every file `passes` times, timed per render: what
/// `digest images render` shows and `digest-bench images render` measures.
package enum RenditionBatch {
    /// One file's renders.
    package struct FileResult: Sendable {
        /// Milliseconds of each render of the file, in the order they ended.
        package var milliseconds: [Double] = []
        /// What the last render made (`hero 1024x512 image/jpeg 81234 B, …`) or why it failed.
        package var outcome = ""
        package var failed = false
    }

    /// Renders every file of `files` `passes` times on one queue, `threads` renders at a time (a render
    /// starts as soon as one ends, with no barrier between passes, so every thread stays busy); the
    /// first pass writes its renditions into `out` (named `<file name>.<rendition>.<ext>`) when given.
    /// Returns each file's renders and the wall time in milliseconds.
    package static func run(
        files: [String], specs: [RenditionSpec], shrinkOnLoad: Bool, out: String?, threads: Int, passes: Int = 1
    ) async throws -> (files: [FileResult], wallMilliseconds: Double) {
        var configuration = RenditionMaker.Configuration()
        configuration.shrinkOnLoad = shrinkOnLoad
        let maker = RenditionMaker(configuration: configuration)
        let sources = try files.map { [UInt8](try Data(contentsOf: URL(fileURLWithPath: $0))) }
        if let out { try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true) }
        @Sendable func render(_ item: Int) -> (index: Int, ms: Double, outcome: String, failed: Bool) {
            let index = item % files.count
            let begin = DispatchTime.now().uptimeNanoseconds
            do {
                let made = try maker.render(sources[index], specs: specs)
                let ms = Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e6
                if let out, item < files.count {
                    let base = URL(fileURLWithPath: files[index]).lastPathComponent
                    for file in made {
                        let name = "\(base).\(file.spec.name).\(fileExtension(forMIMEType: file.mimeType))"
                        try? Data(file.data).write(to: URL(fileURLWithPath: out).appendingPathComponent(name))
                    }
                }
                let outcome = made.map { "\($0.spec.name) \($0.width)x\($0.height) \($0.mimeType) \($0.data.count) B" }.joined(separator: ", ")
                return (index, ms, outcome, false)
            } catch {
                return (index, Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e6, "failed: \(error)", true)
            }
        }
        let items = files.count * passes
        var results = [FileResult](repeating: FileResult(), count: files.count)
        let started = DispatchTime.now().uptimeNanoseconds
        await withTaskGroup(of: (index: Int, ms: Double, outcome: String, failed: Bool).self) { group in
            var next = 0
            while next < min(threads, items) {
                let item = next
                group.addTask { render(item) }
                next += 1
            }
            while let rendered = await group.next() {
                results[rendered.index].milliseconds.append(rendered.ms)
                results[rendered.index].outcome = rendered.outcome
                results[rendered.index].failed = results[rendered.index].failed || rendered.failed
                if next < items {
                    let item = next
                    group.addTask { render(item) }
                    next += 1
                }
            }
        }
        return (results, Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6)
    }
}
