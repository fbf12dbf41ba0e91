import Foundation

@testable import DigestCore

/// A copy of the shipped templates in a temporary folder, to break one file of.
final class TemplatesCopy {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("digest-templates-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: templatesDirectory, to: url)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func write(_ text: String, to file: String) throws {
        try text.write(to: url.appendingPathComponent(file), atomically: true, encoding: .utf8)
    }

    func remove(_ file: String) throws {
        try FileManager.default.removeItem(at: url.appendingPathComponent(file))
    }

    /// The error loading the copy fails with.
    func loadError() -> TemplateError? {
        do {
            _ = try TemplateCatalog(directory: url)
            return nil
        } catch {
            return error
        }
    }
}
