package import DigestCore
package import DigestStore
package import Foundation

/// A realistic sample, the same for the same seed and week: the ``DemoHistory`` of `users` and
/// `articles` as the JSON Lines files `digest import` reads. Users across four languages and many
/// time zones, 1–3 devices each (2% with none), articles with long, emoji and CJK titles, four weeks
/// of reads.
package struct DemoDataset: Sendable {
    package var seed: UInt64 = 2026
    package var users = 2400
    package var articles = 360
    /// Reads in all: this many times `users`.
    package var readsPerUser = 14
    /// Where article images live.
    package var imageBase = "https://images.digest.example"
    /// File names under `imageBase`, shared round-robin by the articles that have an image; nil: one
    /// `<article id>.jpg` per article.
    package var imageNames: [String]?
    /// The last week of reads; reads cover it and the three before.
    package var week: ISOWeek
    /// Weeks of reads, up to `week`.
    package var weeks = 4
    /// Users with no device (the run skips them: `no_devices`).
    package var percentWithoutDevices = 2
    /// iOS devices on APNs directly (``DemoHistory``'s `percentAPNs`).
    package var percentAPNs = 0
    /// Web devices on standard Web Push (``DemoHistory``'s `percentWebPush`), their endpoints under
    /// `webPushBase`.
    package var percentWebPush = 0
    package var webPushBase = DemoWebPush.defaultBase

    package init(week: ISOWeek) {
        self.week = week
    }

    /// Writes `users.jsonl`, `articles.jsonl` and `reads.jsonl` into `directory`; returns their paths.
    package func write(to directory: URL) throws -> [ImportKind: String] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var history = DemoHistory(
            week: week, weeks: weeks, users: users, reads: users * readsPerUser, articles: articles, seed: seed,
            percentWithoutDevices: percentWithoutDevices, percentAPNs: percentAPNs, percentWebPush: percentWebPush,
            webPushBase: webPushBase, imageBase: imageBase, imageNames: imageNames)

        var articleLines: [String] = []
        for article in history.articles {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("id", article.id)
            writer.field("title", article.title)
            writer.field("url", article.url)
            writer.key("imageUrl")
            if let imageURL = article.imageURL { writer.value(imageURL) } else { writer.raw(Array("null".utf8)) }
            writer.key("topics")
            writer.beginArray()
            for topic in article.topics { writer.value(topic) }
            writer.endArray()
            writer.field("publishedAt", Timestamp.format(article.publishedAt))
            writer.field("readingMinutes", article.readingMinutes)
            if let language = article.language { writer.field("language", language) }
            writer.endObject()
            articleLines.append(writer.string)
        }

        var userLines: [String] = []
        var readLines: [String] = []
        while let user = history.nextUser() {
            let reader = user.reader
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("id", reader.id)
            writer.field("locale", reader.locale)
            writer.field("timeZone", reader.timeZone)
            writer.key("optedOut")
            writer.value(reader.optedOut)
            writer.key("devices")
            writer.beginArray()
            for device in reader.devices {
                writer.beginObject()
                if let keys = device.subscriptionKeys {
                    // What the browser's `PushSubscription.toJSON()` gives; the endpoint is the token.
                    writer.field("provider", device.provider.rawValue)
                    writer.key("subscription")
                    writer.beginObject()
                    writer.field("endpoint", device.token)
                    writer.key("expirationTime")
                    writer.raw(Array("null".utf8))
                    writer.key("keys")
                    writer.beginObject()
                    writer.field("p256dh", keys.p256dh)
                    writer.field("auth", keys.auth)
                    writer.endObject()
                    writer.endObject()
                } else {
                    writer.field("token", device.token)
                    writer.field("platform", device.platform.rawValue)
                    if device.provider != .fcm { writer.field("provider", device.provider.rawValue) }
                }
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
            userLines.append(writer.string)

            for read in user.reads {
                var writer = JSONWriter()
                writer.beginObject()
                writer.field("userId", reader.id)
                writer.field("articleId", history.articles[read.article].id)
                writer.field("readAt", Timestamp.format(read.readAt))
                writer.field("seconds", read.seconds)
                writer.endObject()
                readLines.append(writer.string)
            }
        }
        var paths: [ImportKind: String] = [:]
        for (kind, lines) in [(ImportKind.users, userLines), (.articles, articleLines), (.reads, readLines)] {
            let url = directory.appendingPathComponent("\(kind.rawValue).jsonl")
            try (lines.joined(separator: "\n") + "\n").write(to: url, atomically: true, encoding: .utf8)
            paths[kind] = url.path
        }
        return paths
    }
}
