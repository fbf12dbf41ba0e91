import DigestCore
import DigestStore

/// The three kinds of record, each read from a line's JSON object (README, "Command line": the
/// formats under `digest import`; docs/008-import.md: the rules). Free text (a title, a topic) is
/// cleaned by the text rules (``TextRules/clean(_:keepNewlines:)``: NFC, control characters removed,
/// whitespace collapsed); ids, tokens, names and urls pass ``ImportFieldRules`` as written or the
/// line is skipped.
enum ImportRecords {
    /// A line of `users.jsonl`.
    static func user(_ line: JSONFields) throws(LineProblem) -> ImportedUser {
        let id = try ImportFieldRules.id(line.string("id"), "user id")
        return try about("user \(ImportFieldRules.quote(id))") { () throws(LineProblem) -> ImportedUser in
            var locale = LocaleChain.root
            if let given = try line.optionalString("locale") {
                locale = try ImportFieldRules.name(given, "locale", .badLocale)
            }
            var timeZone = "UTC"
            if let given = try line.optionalString("timeZone") {
                timeZone = try ImportFieldRules.name(given, "timeZone", .badTimeZone)
            }
            // `optedOut` sets `off`; `preferences` replaces the stored object whole. With neither, `off`
            // stays as stored (`nil`); with both, they must agree (docs/010).
            let optedOut = try line.optionalBool("optedOut")
            var preferences: ReaderPreferences?
            if let given = line.optionalValue("preferences") {
                let parsed = PreferenceFields.read(given, prefix: "preferences.")
                if let first = parsed.problems.first { throw LineProblem(first.reason, first.message) }
                var read = parsed.preferences
                if let optedOut {
                    if parsed.offGiven && read.off != optedOut {
                        throw LineProblem(
                            .conflictingOff, "optedOut \(optedOut) and preferences.off \(read.off) differ (give one, or the same value)")
                    }
                    read.off = optedOut
                }
                preferences = read
            }
            let off = preferences?.off ?? optedOut
            var devices: [Device] = []
            var seen = Set<String>()
            for (index, element) in (try line.optionalArray("devices") ?? []).enumerated() {
                let path = "devices[\(index)]"
                let device = try self.device(JSONFields(element, at: path), path)
                // A token listed twice counts once, as first listed. Every device is kept, however many
                // (the line's length bounds them): a run picks the ones it sends to (`DeviceSelection`).
                if seen.insert(device.token).inserted { devices.append(device) }
            }
            var reader = Reader(id: id, locale: locale, timeZone: timeZone, optedOut: off ?? false, devices: devices)
            if let preferences { reader.preferences = preferences }
            return ImportedUser(reader: reader, preferences: preferences, off: off)
        }
    }

    /// One entry of a user's `devices` (at `path`, `devices[1]`, for the problems): `token`,
    /// `platform`, `provider` (`fcm` unless given), `topic`, `registeredAt`; a `webpush` device its
    /// `subscription` instead (``webPushDevice(_:_:)``). The same reading serves every file that
    /// lists devices (``DeviceList``).
    static func device(_ fields: JSONFields, _ path: String) throws(LineProblem) -> Device {
        let providerName = try fields.optionalString("provider")
        if providerName == Provider.webpush.rawValue {
            return try webPushDevice(fields, path)
        }
        var token = try ImportFieldRules.token(fields.string("token"), path)
        var provider = Provider.fcm
        if let providerName {
            guard let given = Provider(rawValue: providerName) else {
                throw LineProblem(
                    .badProvider, "\(path): unknown provider \(ImportFieldRules.quote(providerName)) (fcm, apns or webpush)")
            }
            provider = given
        }
        let platform: Platform
        // An APNs device is an iPhone or iPad: its platform may be left out, and may say nothing else.
        switch (provider, try fields.optionalString("platform")) {
        case (.apns, nil), (.apns, "ios"?):
            platform = .ios
        case (.apns, let name?):
            throw LineProblem(.badPlatform, "\(path): platform \(ImportFieldRules.quote(name)) with provider apns (ios or none)")
        case (_, let given):
            let name: String
            if let given { name = given } else { name = try fields.string("platform") }
            guard let known = Platform(rawValue: name) else {
                throw LineProblem(.badPlatform, "\(path): unknown platform \(ImportFieldRules.quote(name)) (android, ios or web)")
            }
            platform = known
        }
        if provider == .apns { token = try ImportFieldRules.apnsToken(token, path) }
        var topic: String?
        if let given = try fields.optionalString("topic") { topic = try ImportFieldRules.topic(given, path) }
        let registeredAt = try fields.optionalInstant("registeredAt")
        return Device(token: token, platform: platform, registeredAt: registeredAt, topic: topic, provider: provider)
    }

    /// A `webpush` device: a browser's `PushSubscription.toJSON()` as `subscription` (`endpoint`,
    /// `expirationTime`, `keys.p256dh`, `keys.auth`). The endpoint is the device's token, so `token`
    /// may be left out and, when given, must be the endpoint; the platform may be left out and may say
    /// nothing but `web`. The keys pass the sender's own check (``WebPushSubscriptionKeys``) and are kept
    /// as written. `expirationTime` (milliseconds since the epoch, or `null`) is read and not kept:
    /// browsers give `null`, and a subscription past its time is one the push service answers 404 or
    /// 410 for, which the dead-device memory records like any dead token.
    private static func webPushDevice(_ fields: JSONFields, _ path: String) throws(LineProblem) -> Device {
        if let name = try fields.optionalString("platform"), name != Platform.web.rawValue {
            throw LineProblem(.badPlatform, "\(path): platform \(ImportFieldRules.quote(name)) with provider webpush (web or none)")
        }
        let subscription = try fields.object("subscription")
        let endpoint = try ImportFieldRules.endpoint(subscription.string("endpoint"), path)
        if let token = try fields.optionalString("token"), token != endpoint {
            throw LineProblem(.badToken, "\(path): a webpush device's token, when given, must be its subscription's endpoint")
        }
        _ = try subscription.optionalCount("expirationTime", max: Int.max)
        let keys = try subscription.object("keys")
        let p256dh = try keys.string("p256dh"), auth = try keys.string("auth")
        do {
            _ = try WebPushSubscriptionKeys(p256dh: p256dh, auth: auth)
        } catch {
            throw LineProblem(.badSubscriptionKeys, "\(path): \(error.message)")
        }
        var topic: String?
        if let given = try fields.optionalString("topic") { topic = try ImportFieldRules.topic(given, path) }
        let registeredAt = try fields.optionalInstant("registeredAt")
        return Device(
            token: endpoint, platform: .web, registeredAt: registeredAt, topic: topic, provider: .webpush,
            subscriptionKeys: .init(p256dh: p256dh, auth: auth))
    }

    /// A line of `articles.jsonl`.
    static func article(_ line: JSONFields) throws(LineProblem) -> Article {
        let id = try ImportFieldRules.id(line.string("id"), "article id")
        return try about("article \(ImportFieldRules.quote(id))") { () throws(LineProblem) -> Article in
            let title = TextRules.clean(try line.string("title"))
            let url = try ImportFieldRules.url(line.string("url"), "url")
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
                throw LineProblem(.badURL, "url must be http or https")
            }
            var image: String?
            if let given = try line.optionalString("imageUrl"), !given.isEmpty {
                image = try ImportFieldRules.url(given, "imageUrl")
            }
            var topics: [String] = []
            var seen = Set<String>()
            for (index, element) in (try line.optionalArray("topics") ?? []).enumerated() {
                guard case .string(let given) = element else {
                    throw LineProblem(.wrongType, "'topics[\(index)]' must be a string, not \(element.kind)")
                }
                // Cleaning may leave nothing, or a topic listed before.
                let topic = TextRules.clean(given)
                guard !topic.isEmpty, seen.insert(topic).inserted else { continue }
                guard topic.utf8.count <= ImportLimits.maxTopicBytes else {
                    throw LineProblem(
                        .badTopics,
                        "topic \(ImportFieldRules.quote(topic)) is \(topic.utf8.count) bytes, over the limit of \(ImportLimits.maxTopicBytes)")
                }
                topics.append(topic)
            }
            guard topics.count <= ImportLimits.maxTopicsPerArticle else {
                throw LineProblem(.badTopics, "\(topics.count) topics, over the limit of \(ImportLimits.maxTopicsPerArticle)")
            }
            let published = try line.instant("publishedAt")
            let minutes = try line.optionalCount("readingMinutes", max: ImportLimits.maxReadingMinutes) ?? 0
            var language: String?
            if let given = try line.optionalString("language"), !given.isEmpty {
                guard given.utf8.count <= ImportLimits.maxNameBytes, LanguageTag.isWellFormed(given) else {
                    throw LineProblem(
                        .badLanguage, "language \(ImportFieldRules.quote(given)) is not a BCP 47 tag (like en, pl-PL or zh-Hans)")
                }
                language = given
            }
            return Article(
                id: id, title: title, url: url, imageURL: image, topics: topics, publishedAt: published,
                readingMinutes: minutes, language: language)
        }
    }

    /// A line of `reads.jsonl`.
    static func read(_ line: JSONFields) throws(LineProblem) -> ImportedRead {
        let user = try ImportFieldRules.id(line.string("userId"), "userId")
        let article = try ImportFieldRules.id(line.string("articleId"), "articleId")
        let readAt = try line.instant("readAt")
        let seconds = try line.optionalCount("seconds", max: ImportLimits.maxReadSeconds) ?? 0
        return ImportedRead(userID: user, articleID: article, readAt: readAt, seconds: seconds)
    }

    /// `body`'s problem, if any, said of `who` (`user 'u1': …`).
    private static func about<T>(_ who: String, _ body: () throws(LineProblem) -> T) throws(LineProblem) -> T {
        do {
            return try body()
        } catch {
            throw LineProblem(error.code, "\(who): \(error.reason)")
        }
    }
}
