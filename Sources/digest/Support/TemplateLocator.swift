import Foundation

/// Finds the `Templates/` directory: `--templates`, then `DIGEST_TEMPLATES`, then `./Templates`, then
/// a `Templates/` beside the executable or in a folder above it (a checkout's build folder).
enum TemplateLocator {
    static func locate(_ explicit: String?) throws -> URL {
        if let explicit { return URL(fileURLWithPath: explicit) }
        if let fromEnvironment = ProcessInfo.processInfo.environment["DIGEST_TEMPLATES"], !fromEnvironment.isEmpty {
            return URL(fileURLWithPath: fromEnvironment)
        }
        let fm = FileManager.default
        var candidates = [URL(fileURLWithPath: fm.currentDirectoryPath)]
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(folder)
            folder = folder.deletingLastPathComponent()
        }
        for candidate in candidates {
            let templates = candidate.appendingPathComponent("Templates")
            if fm.fileExists(atPath: templates.appendingPathComponent("en").path) { return templates }
        }
        throw CommandError("no Templates/ directory found: pass --templates DIR or set DIGEST_TEMPLATES")
    }
}

/// A command-line failure with a message for a person.
struct CommandError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
