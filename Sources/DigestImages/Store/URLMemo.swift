import Crypto
import DigestCore
import DigestImageCodecs
import Foundation

/// What became of an image URL, remembered in the attachments directory so that the later
/// processes of a week (hourly rolling runs, other workers, other machines sharing the directory)
/// do not fetch it again.
///
/// One file per URL: `<attachments>/.urls/<first 32 hex of sha256(url)>.json`, holding the URL, the
/// instant it was fetched (Unix seconds), a hash of the settings the outcome depends on, and either
/// the renditions (file names, MIME types, sizes, dimensions) or the reason of a permanent failure.
/// It is written to a temporary name and renamed, so a reader sees the old entry or the whole new one;
/// two processes that fetch the same URL at once both write it, and the last rename wins.
///
/// An entry is used only while it is younger than the lifetime, was made under the same settings,
/// names the same URL, and every rendition file it names is still there with its size. Anything else
/// — expired, pruned files, other settings, a file that is not a readable entry — is passed over and
/// the URL fetched again (its entry overwritten).
struct URLMemo: Sendable {
    /// The folder inside the attachments directory.
    static let folderName = ".urls"
    /// The format of the entries; another number is not read.
    static let version = 1
    /// How far in the future an entry's instant may lie and still be used: the clocks of workers on
    /// other machines may run a little ahead.
    static let clockSkew: Int64 = 300
    /// Entries are small; a larger file is not one.
    static let maxEntryBytes = 64 * 1024

    /// `<attachments>/.urls`.
    let directory: URL
    /// A hash of the settings outcomes depend on (see `ImageAttachments.memoSettings`).
    let settings: String
    /// Seconds an entry is used for after its fetch.
    let lifetime: Int64

    init(attachments: URL, settings: String, lifetime: Int64) {
        self.directory = attachments.appendingPathComponent(Self.folderName, isDirectory: true)
        self.settings = settings
        self.lifetime = lifetime
    }

    /// One remembered outcome, as stored.
    struct Entry: Codable, Sendable, Equatable {
        var version: Int
        var url: String
        /// When the URL was fetched, Unix seconds.
        var fetchedAt: Int64
        var settings: String
        /// The renditions of an image that was made (nil for a failure).
        var hero: File?
        var icon: File?
        /// The reason of a permanent failure (nil for an image that was made).
        var failure: String?
    }

    /// A rendition file, with what `Rendition` needs besides the public base URL.
    struct File: Codable, Sendable, Equatable {
        /// `<hash>.<ext>` in the attachments directory.
        var name: String
        var mimeType: String
        var width: Int
        var height: Int
        var bytes: Int
    }

    /// What a look-up found.
    enum Lookup: Sendable, Equatable {
        /// A usable entry: its outcome.
        case remembered(ImageOutcome)
        /// No entry for the URL.
        case absent
        /// An entry that is not used (expired, a rendition file gone, other settings), and why.
        case stale(String)
        /// A file that is no readable entry, and why.
        case unreadable(String)
    }

    /// The entry's file name stem for `url`: the first 32 hex digits of its SHA-256.
    static func key(for url: String) -> String {
        String(SHA256.hash(data: Array(url.utf8)).hexString.prefix(32))
    }

    /// The entry file of `url`.
    func file(for url: String) -> URL {
        directory.appendingPathComponent("\(Self.key(for: url)).json")
    }

    /// Whether a failure with `reason` is remembered.
    ///
    /// Permanent (remembered): what the server deliberately answered or what the bytes are —
    /// `http_4xx` except `http_408` and `http_429`, `bad_url`, `address_refused`,
    /// `too_many_redirects`, `bad_redirect`, `too_large`, `empty_body`, `not_an_image`,
    /// `unsupported_type`, `too_many_pixels`, `zero_size`, `truncated`, `corrupt` and
    /// `rendition_too_large`.
    ///
    /// Transient (fetched again by the next process): `timeout`, `connect_failed`, `dns_failed`,
    /// `http_5xx`, `http_408`, `http_429`, any other status, `store_failed` (our own disk), and any
    /// reason not listed here.
    static func isPermanent(_ reason: String) -> Bool {
        if permanentReasons.contains(reason) { return true }
        if reason.hasPrefix("http_"), let status = Int(reason.dropFirst(5)), reason == "http_\(status)" {
            return (400..<500).contains(status) && status != 408 && status != 429
        }
        return false
    }

    private static let permanentReasons: Set<String> = Set(
        [
            ImageError.Code.badURL, .addressRefused, .tooManyRedirects, .badRedirect, .tooLarge, .empty, .notAnImage,
            .unsupportedType, .tooManyPixels, .zeroSize, .truncated, .corrupt, .renditionTooLarge,
        ].map(\.reason))

    /// The remembered outcome of `url` at `now` (Unix seconds), if there is a usable one. Reads the
    /// file system: call it off the concurrency pool.
    func lookUp(_ url: String, now: Int64, store: AttachmentStore) -> Lookup {
        let path = file(for: url).path
        guard FileManager.default.fileExists(atPath: path) else { return .absent }
        guard let data = FileManager.default.contents(atPath: path) else { return .unreadable("cannot read \(path)") }
        guard data.count <= Self.maxEntryBytes else { return .unreadable("\(path) is \(data.count) bytes") }
        let entry: Entry
        do {
            entry = try JSONDecoder().decode(Entry.self, from: data)
        } catch {
            return .unreadable("\(path) is not an entry: \(error)")
        }
        guard entry.version == Self.version else { return .unreadable("\(path) has version \(entry.version)") }
        guard entry.url == url else { return .stale("the entry is for another URL") }
        guard entry.settings == settings else { return .stale("the entry was made under other settings") }
        let age = now - entry.fetchedAt
        guard age < lifetime else { return .stale("fetched \(age) s ago, remembered for \(lifetime) s") }
        guard age > -Self.clockSkew else { return .stale("fetched \(-age) s in the future") }
        switch (entry.hero, entry.failure) {
        case (nil, let reason?) where entry.icon == nil:
            guard Self.isPermanent(reason) else { return .unreadable("\(path) remembers '\(reason)', which is no permanent failure") }
            return .remembered(.unavailable(reason: reason))
        case (let hero?, nil):
            var renditions: [Rendition] = []
            for file in [hero] + (entry.icon.map { [$0] } ?? []) {
                guard Self.isValid(file) else { return .unreadable("\(path) names an impossible rendition \(file.name)") }
                guard store.size(of: file.name) == file.bytes else { return .stale("\(file.name) is gone or changed") }
                renditions.append(
                    Rendition(
                        url: store.url(of: file.name), mimeType: file.mimeType, width: file.width, height: file.height,
                        byteCount: file.bytes))
            }
            return .remembered(.ready(ImageRenditions(hero: renditions[0], icon: renditions.count > 1 ? renditions[1] : nil)))
        default:
            return .unreadable("\(path) has neither renditions nor a failure, or both")
        }
    }

    /// The entry for `outcome`, or nil when it is not remembered (a transient failure, or renditions
    /// that are not files of `store`).
    func entry(for url: String, outcome: ImageOutcome, fetchedAt: Int64, store: AttachmentStore) -> Entry? {
        switch outcome {
        case .unavailable(let reason):
            guard Self.isPermanent(reason) else { return nil }
            return Entry(version: Self.version, url: url, fetchedAt: fetchedAt, settings: settings, hero: nil, icon: nil, failure: reason)
        case .ready(let renditions):
            let prefix = store.url(of: "")
            func file(_ rendition: Rendition) -> File? {
                guard rendition.url.hasPrefix(prefix) else { return nil }
                let file = File(
                    name: String(rendition.url.dropFirst(prefix.count)), mimeType: rendition.mimeType, width: rendition.width,
                    height: rendition.height, bytes: rendition.byteCount)
                return Self.isValid(file) ? file : nil
            }
            guard let hero = file(renditions.hero) else { return nil }
            var icon: File?
            if let rendition = renditions.icon {
                guard let made = file(rendition) else { return nil }
                icon = made
            }
            return Entry(version: Self.version, url: url, fetchedAt: fetchedAt, settings: settings, hero: hero, icon: icon, failure: nil)
        }
    }

    /// Writes `entry` (temporary name, then rename), creating the folder when needed.
    func write(_ entry: Entry) throws(ImageError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            data = try encoder.encode(entry)
        } catch {
            throw ImageError(.storeFailed, "cannot write the URL memo: \(error)", context: ["directory": directory.path])
        }
        try AttachmentStore.write(Array(data), named: "\(Self.key(for: entry.url)).json", in: directory)
    }

    /// A content-named rendition file (`<32 hex>.jpg|png|gif`) of a matching type and a positive size.
    static func isValid(_ file: File) -> Bool {
        let parts = file.name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 32, parts[0].allSatisfy({ $0.isASCII && $0.isHexDigit && !$0.isUppercase }) else {
            return false
        }
        guard ["image/jpeg", "image/png", "image/gif"].contains(file.mimeType), parts[1] == fileExtension(forMIMEType: file.mimeType) else {
            return false
        }
        return file.width > 0 && file.height > 0 && file.bytes > 0
    }
}
