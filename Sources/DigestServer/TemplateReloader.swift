import DigestCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The templates the previews compose with, read again only when a file of theirs changed, so an edit
/// shows on the next reload and an unchanged folder costs a `stat` per file: no file is opened.
///
/// A change is any difference in the modification time, size or inode of the directory, a locale
/// folder, or a template, `strings.json` or `topics.json` file (present or absent) of a locale folder.
final class TemplateReloader: Sendable {
    let directory: URL
    private let loaded = Mutex<(stamps: [FileStamp], catalog: TemplateCatalog)?>(nil)

    init(directory: URL) {
        self.directory = directory
    }

    /// The catalog of the folder as it is now.
    func catalog() throws -> TemplateCatalog {
        if let current = loaded.withLock({ $0 }), current.stamps == Self.stamps(of: current.stamps.map(\.path)) {
            return current.catalog
        }
        let paths = try Self.paths(under: directory)
        let stamps = Self.stamps(of: paths)
        let catalog = try TemplateCatalog(directory: directory)
        loaded.withLock { $0 = (stamps, catalog) }
        return catalog
    }

    /// The directory, its locale folders and every file a locale folder may hold.
    static func paths(under directory: URL) throws -> [String] {
        let fm = FileManager.default
        var paths = [directory.path]
        let names = TemplateCatalog.Piece.allCases.map { $0.rawValue + ".mustache" } + ["strings.json", "topics.json"]
        for entry in (try? fm.contentsOfDirectory(atPath: directory.path))?.sorted() ?? [] {
            let folder = directory.appendingPathComponent(entry).path
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else { continue }
            paths.append(folder)
            paths.append(contentsOf: names.map { folder + "/" + $0 })
        }
        return paths
    }

    static func stamps(of paths: [String]) -> [FileStamp] {
        paths.map { path in
            var info = stat()
            guard stat(path, &info) == 0 else { return FileStamp(path: path, inode: 0, size: -1, seconds: 0, nanoseconds: 0) }
            return FileStamp(
                path: path, inode: UInt64(info.st_ino), size: Int64(info.st_size), seconds: Int64(info.st_mtim.tv_sec),
                nanoseconds: Int64(info.st_mtim.tv_nsec))
        }
    }

    struct FileStamp: Equatable, Sendable {
        var path: String
        var inode: UInt64
        var size: Int64
        var seconds: Int64
        var nanoseconds: Int64
    }
}
