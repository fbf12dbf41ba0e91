package import DigestCore
import Synchronization

/// An attachment provider holding fixed outcomes per image URL, counting the requests it answered.
package final class InMemoryAttachments: AttachmentProvider {
    private let outcomes: [String: ImageOutcome]
    private let requests = Mutex<[String: Int]>([:])

    /// `outcomes` by image URL; any other URL is unavailable with reason `not in fixture`.
    package init(_ outcomes: [String: ImageOutcome]) {
        self.outcomes = outcomes
    }

    /// Gives every URL a JPEG hero and PNG icon under `base`.
    package static func everything(base: String) -> EveryImage { EveryImage(base: base) }

    package func renditions(forImageAt url: String) async -> ImageOutcome {
        requests.withLock { $0[url, default: 0] += 1 }
        return outcomes[url] ?? .unavailable(reason: "not in fixture")
    }

    /// How many times each URL was asked for.
    package var requestCounts: [String: Int] { requests.withLock { $0 } }
}

/// Renditions for any URL, named from the URL's last path component.
package struct EveryImage: AttachmentProvider {
    package let base: String

    package func renditions(forImageAt url: String) async -> ImageOutcome {
        let name = url.split(separator: "/").last.map(String.init) ?? "image"
        return .ready(
            ImageRenditions(
                hero: Rendition(url: "\(base)/\(name)-hero.jpg", mimeType: "image/jpeg", width: 1024, height: 512, byteCount: 90_000),
                icon: Rendition(url: "\(base)/\(name)-icon.png", mimeType: "image/png", width: 256, height: 256, byteCount: 30_000)))
    }
}
