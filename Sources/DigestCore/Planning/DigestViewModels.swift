public import Mustache

/// What the title and body templates see. Strings only, already localized and cleaned.
public struct DigestViewModel: MustacheParent, TemplateValues, Sendable {
    public var week: String
    public var articles: String
    public var articlesCount: Int
    public var minutes: String
    public var minutesCount: Int
    public var days: String
    public var daysCount: Int
    public var topTopic: String
    public var change: String
    public var topPick: String
    public var picksCount: Int

    public init(
        week: String, articles: String, articlesCount: Int, minutes: String, minutesCount: Int, days: String,
        daysCount: Int, topTopic: String, change: String, topPick: String, picksCount: Int
    ) {
        self.week = week
        self.articles = articles
        self.articlesCount = articlesCount
        self.minutes = minutes
        self.minutesCount = minutesCount
        self.days = days
        self.daysCount = daysCount
        self.topTopic = topTopic
        self.change = change
        self.topPick = topPick
        self.picksCount = picksCount
    }

    /// The counts stay numbers for the Mustache library (its transforms such as `plusone` need
    /// them); every other name is its text.
    public func child(named name: String) -> Any? {
        switch name {
        case "articlesCount": articlesCount
        case "minutesCount": minutesCount
        case "daysCount": daysCount
        case "picksCount": picksCount
        default: text(named: name)
        }
    }

    public func text(named name: String) -> String? {
        switch name {
        case "week": week
        case "articles": articles
        case "articlesCount": String(articlesCount)
        case "minutes": minutes
        case "minutesCount": String(minutesCount)
        case "days": days
        case "daysCount": String(daysCount)
        case "topTopic": topTopic.isEmpty ? nil : topTopic
        case "change": change.isEmpty ? nil : change
        case "topPick": topPick.isEmpty ? nil : topPick
        case "picksCount": String(picksCount)
        default: nil
        }
    }
}

/// What the bullet template sees for one pick.
public struct BulletViewModel: MustacheParent, TemplateValues, Sendable {
    public var title: String
    public var minutes: String
    public var topic: String

    public func child(named name: String) -> Any? { text(named: name) }

    public func text(named name: String) -> String? {
        switch name {
        case "title": title
        case "minutes": minutes
        case "topic": topic.isEmpty ? nil : topic
        default: nil
        }
    }
}

/// What the "+N more" template sees.
public struct MoreViewModel: MustacheParent, TemplateValues, Sendable {
    public var more: String
    public var count: Int

    /// `count` stays a number for the Mustache library; `more` is its text.
    public func child(named name: String) -> Any? {
        if name == "count" { return count }
        return text(named: name)
    }

    public func text(named name: String) -> String? {
        switch name {
        case "more": more
        case "count": String(count)
        default: nil
        }
    }
}
