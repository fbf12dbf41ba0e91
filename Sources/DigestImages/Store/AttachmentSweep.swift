#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
public import Foundation
import NIOPosix

/// Removes from an attachments directory what no message needs any more: rendition files that no
/// message still within its TTL links to, the URL memo's entries that are past their lifetime or name
/// files that are gone, and temporary files a crashed writer left behind (`digest queue prune
/// --attachments`, `docs/001-outbox-semantics.md`, "Retention").
///
/// Nothing modified within ``Configuration/grace`` is touched, so a run writing files at the same
/// time loses none: a run writes a rendition before any message links to it, and refreshes the
/// modification time of a file it reuses (from the directory or from the memo), so a file it is about
/// to link is always recent. Only files named like renditions (`<32 hex digits>.jpg|png|gif`), the
/// memo's `<32 hex digits>.json` entries and `.….tmp` files are considered; anything else in the
/// directory is left alone.
///
/// ```swift
/// let linked = AttachmentSweep.linkedNames(try await database.liveImageURLs(now: now))
/// let result = try AttachmentSweep(configuration: .init(directory: dir)).run(keeping: linked, now: now)
/// ```
public struct AttachmentSweep: Sendable {
    public struct Configuration: Sendable, Hashable {
        /// The attachments directory (`--attachments`).
        public var directory: URL
        /// The default ``grace``: one day.
        public static let defaultGrace: Int64 = 86_400

        /// Seconds since its last modification during which a file is kept whatever links it: one day,
        /// longer than a run.
        public var grace: Int64 = Self.defaultGrace
        /// How long a URL memo entry is used after its fetch: the run's `urlMemoLifetime`, six days.
        public var memoLifetime: Int64 = 6 * 86_400
        /// Count what would go and delete nothing.
        public var dryRun = false

        public init(directory: URL) {
            self.directory = directory
        }
    }

    /// What a sweep deleted (or would delete).
    public struct Result: Sendable, Codable, Hashable {
        /// Rendition files, and temporary files left behind.
        public var files = 0
        /// Their bytes.
        public var bytes: Int64 = 0
        /// URL memo entries.
        public var memoEntries = 0
        /// Rendition files kept because a live message links to them.
        public var linked = 0
        /// Rendition files kept, unlinked, because they are younger than the grace period.
        public var recent = 0

        public init() {}
    }

    public let configuration: Configuration

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// The rendition file names among `urls`: each URL's last path component, when it is named like a
    /// rendition (whatever the base URL, so a changed `--attachments-url` keeps older messages' files).
    public static func linkedNames(_ urls: some Sequence<String>) -> Set<String> {
        var names = Set<String>()
        for url in urls {
            let path = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
            guard let name = path.split(separator: "/").last.map(String.init), isRenditionName(name) else { continue }
            names.insert(name)
        }
        return names
    }

    /// `<32 lowercase hex digits>.jpg|png|gif`, as ``AttachmentStore`` names its files.
    package static func isRenditionName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 2 && isKey(parts[0]) && ["jpg", "png", "gif"].contains(parts[1])
    }

    /// Sweeps the directory at `now` (Unix seconds), keeping every rendition named in `linked`.
    /// Blocks on the file system: call it off the concurrency pool.
    public func run(keeping linked: Set<String>, now: Int64) throws(ImageSweepError) -> Result {
        let directory = configuration.directory
        let oldEnough = now - configuration.grace
        var result = Result()
        var gone = Set<String>()
        for name in try Self.names(in: directory) {
            guard let info = Self.info(directory.appendingPathComponent(name)), info.isFile else { continue }
            if Self.isRenditionName(name) {
                if linked.contains(name) {
                    result.linked += 1
                    continue
                }
                guard info.modified < oldEnough else {
                    result.recent += 1
                    continue
                }
                try remove(name, in: directory, info: info, into: &result)
                gone.insert(name)
            } else if Self.isLeftover(name), info.modified < oldEnough {
                try remove(name, in: directory, info: info, into: &result)
            }
        }
        try sweepMemo(gone: gone, now: now, into: &result)
        return result
    }

    /// ``run(keeping:now:)`` on the blocking-I/O pool, off the concurrency pool.
    public func sweep(keeping linked: Set<String>, now: Int64) async throws -> Result {
        try await NIOThreadPool.singleton.runIfActive { try self.run(keeping: linked, now: now) }
    }

    /// Removes the memo's entries past their lifetime, naming a file that is gone (or is going in this
    /// sweep), or unreadable (once older than the grace period), and its leftover temporary files.
    private func sweepMemo(gone: Set<String>, now: Int64, into result: inout Result) throws(ImageSweepError) {
        let folder = configuration.directory.appendingPathComponent(URLMemo.folderName, isDirectory: true)
        guard FileManager.default.fileExists(atPath: folder.path) else { return }
        let oldEnough = now - configuration.grace
        for name in try Self.names(in: folder) {
            let file = folder.appendingPathComponent(name)
            guard let info = Self.info(file), info.isFile else { continue }
            if Self.isLeftover(name) {
                if info.modified < oldEnough { try remove(name, in: folder, info: info, into: &result) }
                continue
            }
            guard name.hasSuffix(".json"), Self.isKey(name.dropLast(5)) else { continue }
            let entry = info.size <= URLMemo.maxEntryBytes
                ? FileManager.default.contents(atPath: file.path).flatMap { try? JSONDecoder().decode(URLMemo.Entry.self, from: $0) } : nil
            let stale: Bool
            if let entry, entry.version == URLMemo.version {
                let files = [entry.hero, entry.icon].compactMap { $0?.name }
                stale = now - entry.fetchedAt >= configuration.memoLifetime
                    || files.contains { gone.contains($0) || !FileManager.default.fileExists(atPath: configuration.directory.appendingPathComponent($0).path) }
            } else {
                stale = info.modified < oldEnough
            }
            guard stale else { continue }
            if !configuration.dryRun { try Self.unlink(file) }
            result.memoEntries += 1
        }
    }

    private func remove(_ name: String, in directory: URL, info: Info, into result: inout Result) throws(ImageSweepError) {
        if !configuration.dryRun { try Self.unlink(directory.appendingPathComponent(name)) }
        result.files += 1
        result.bytes += info.size
    }

    /// A temporary file of ``AttachmentStore``'s writes (`.<name>.<pid>.<random>.tmp`).
    private static func isLeftover(_ name: String) -> Bool { name.hasPrefix(".") && name.hasSuffix(".tmp") }

    private static func isKey(_ text: Substring) -> Bool {
        text.count == 32 && text.allSatisfy { $0.isASCII && $0.isHexDigit && !$0.isUppercase }
    }

    private static func names(in directory: URL) throws(ImageSweepError) -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw ImageSweepError("cannot list \(directory.path): \(error.localizedDescription)")
        }
    }

    private static func unlink(_ file: URL) throws(ImageSweepError) {
        #if canImport(Glibc)
        let code = Glibc.unlink(file.path)
        #else
        let code = Darwin.unlink(file.path)
        #endif
        // Gone already (another sweep, a run replacing it): nothing to do.
        guard code == 0 || errno == ENOENT else {
            throw ImageSweepError("cannot delete \(file.path): \(String(cString: strerror(errno)))")
        }
    }

    /// What `lstat` says of a file (a symbolic link is not a file here).
    private struct Info {
        var isFile: Bool
        var size: Int64
        /// Modification time, Unix seconds.
        var modified: Int64
    }

    private static func info(_ file: URL) -> Info? {
        var status = stat()
        guard lstat(file.path, &status) == 0 else { return nil }
        #if canImport(Glibc)
        let modified = Int64(status.st_mtim.tv_sec)
        #else
        let modified = Int64(status.st_mtimespec.tv_sec)
        #endif
        return Info(isFile: (status.st_mode & S_IFMT) == S_IFREG, size: Int64(status.st_size), modified: modified)
    }
}

/// A sweep that could not list or delete, with the path and the reason.
public struct ImageSweepError: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}
