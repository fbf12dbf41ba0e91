import Mustache

/// What the title and body templates see. Strings only, already localized and cleaned.
///
/// The counts `articles`, `minutes` and `days` are phrases in the nominative ("5 минут"); a template
/// asks for another case with the case's name after the count's (`{{minutesAccusative}}`: "за 5
/// минут"), given by ``caseForms`` when the locale's `strings.json` has forms for that case, else the
/// nominative. `topTopic` is the topic's display name from `topics.json` (the slug when it has none).
package struct DigestViewModel: MustacheParent, TemplateValues, Sendable {
    package var week: String
    package var articles: String
    package var articlesCount: Int
    package var minutes: String
    package var minutesCount: Int
    package var days: String
    package var daysCount: Int
    package var topTopic: String
    package var change: String
    package var topPick: String
    package var picksCount: Int
    /// For a digest covering more than one week (a reader's pace), the weeks as a plural phrase ("2
    /// weeks", in other cases `weeksAccusative` and so on); empty, so no value and a closed
    /// `{{#weeks}}` section, for a weekly digest.
    package var weeks: String = ""
    /// How many weeks the digest covers (1 for a weekly one).
    package var weeksCount: Int = 1
    /// The counts in the cases other than the nominative, by template name (`minutesAccusative`).
    package var caseForms: [String: String]

    package init(
        week: String, articles: String, articlesCount: Int, minutes: String, minutesCount: Int, days: String,
        daysCount: Int, topTopic: String, change: String, topPick: String, picksCount: Int,
        caseForms: [String: String] = [:]
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
        self.caseForms = caseForms
    }

    /// The view model of `digest` in a locale: counts as plural phrases in every case the locale
    /// gives forms for, the top topic by its display name, the reading time at least 1 minute when
    /// an article was read.
    package init(_ digest: WeeklyDigest, templates: LocalizedTemplates) {
        let stats = digest.stats
        let minutes = Self.shownMinutes(articles: stats.articlesRead, minutes: stats.minutesRead)
        var change = ""
        if let percent = stats.minutesChangePercent {
            change = percent > 0 ? "+\(percent)%" : (percent < 0 ? "−\(-percent)%" : "±0%")
        }
        var caseForms: [String: String] = [:]
        templates.casePhrases("articles", stats.articlesRead, into: &caseForms)
        templates.casePhrases("minutes", minutes, into: &caseForms)
        templates.casePhrases("days", stats.activeDays, into: &caseForms)
        self.init(
            week: digest.window.week.description,
            articles: templates.plural("articles", stats.articlesRead), articlesCount: stats.articlesRead,
            minutes: templates.plural("minutes", minutes), minutesCount: minutes,
            days: templates.plural("days", stats.activeDays), daysCount: stats.activeDays,
            topTopic: stats.topTopic.map { TextRules.clean(templates.topic($0)) } ?? "",
            change: change,
            topPick: digest.picks.first.map { TextRules.clean($0.title) } ?? "",
            picksCount: digest.picks.count,
            caseForms: caseForms)
        if digest.coveredWeeks > 1 {
            weeks = templates.plural("weeks", digest.coveredWeeks)
            weeksCount = digest.coveredWeeks
            templates.casePhrases("weeks", digest.coveredWeeks, into: &self.caseForms)
        }
    }

    /// The reading time a digest shows: at least 1 minute when at least one article was read (a read
    /// of a few seconds rounds to 0 minutes, and "1 article, 0 min" reads as a mistake).
    package static func shownMinutes(articles: Int, minutes: Int) -> Int {
        articles > 0 ? max(1, minutes) : minutes
    }

    /// The counts stay numbers for the Mustache library (its transforms such as `plusone` need
    /// them); every other name is its text.
    package func child(named name: String) -> Any? {
        switch name {
        case "articlesCount": articlesCount
        case "minutesCount": minutesCount
        case "daysCount": daysCount
        case "picksCount": picksCount
        case "weeksCount": weeksCount
        default: text(named: name)
        }
    }

    package func text(named name: String) -> String? {
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
        case "weeks": weeks.isEmpty ? nil : weeks
        case "weeksCount": String(weeksCount)
        default: caseForm(name, caseForms) { slot in
            switch slot {
            case "articles": articles
            case "minutes": minutes
            case "days": days
            case "weeks": weeks.isEmpty ? nil : weeks
            default: nil
            }
        }
        }
    }
}

/// A count in another case: its form when the locale gives one, else the count's nominative phrase
/// (`nominative(slot)`), `nil` for a name that is no count in a case.
private func caseForm(_ name: String, _ forms: [String: String], nominative: (String) -> String?) -> String? {
    if let form = forms[name] { return form }
    guard let (slot, _) = GrammaticalCase.split(name) else { return nil }
    return nominative(slot)
}

/// What the bullet template sees for one pick: `minutes` is its reading time as a phrase (other
/// cases as in ``DigestViewModel``), `topic` the display name of its first topic.
package struct BulletViewModel: MustacheParent, TemplateValues, Sendable {
    package var title: String
    package var minutes: String
    package var topic: String
    /// `minutes` in the cases other than the nominative, by template name (`minutesAccusative`).
    package var caseForms: [String: String] = [:]

    /// A pick's bullet: `topic` is a slug, shown by its display name.
    init(title: String, minutesCount: Int, topic: String, templates: LocalizedTemplates) {
        self.title = title
        self.minutes = templates.plural("minutes", minutesCount)
        self.topic = topic.isEmpty ? "" : templates.topic(topic)
        templates.casePhrases("minutes", minutesCount, into: &caseForms)
    }

    init(title: String, minutes: String, topic: String, caseForms: [String: String] = [:]) {
        self.title = title
        self.minutes = minutes
        self.topic = topic
        self.caseForms = caseForms
    }

    package func child(named name: String) -> Any? { text(named: name) }

    package func text(named name: String) -> String? {
        switch name {
        case "title": title
        case "minutes": minutes
        case "topic": topic.isEmpty ? nil : topic
        default: caseForm(name, caseForms) { $0 == "minutes" ? minutes : nil }
        }
    }
}

/// What the "+N more" template sees.
package struct MoreViewModel: MustacheParent, TemplateValues, Sendable {
    package var more: String
    package var count: Int
    /// `more` in the cases other than the nominative, by template name (`moreAccusative`).
    package var caseForms: [String: String] = [:]

    /// The line for `count` picks the body has no room for.
    init(count: Int, templates: LocalizedTemplates) {
        self.more = templates.plural("more", count)
        self.count = count
        templates.casePhrases("more", count, into: &caseForms)
    }

    init(more: String, count: Int, caseForms: [String: String] = [:]) {
        self.more = more
        self.count = count
        self.caseForms = caseForms
    }

    /// `count` stays a number for the Mustache library; `more` is its text.
    package func child(named name: String) -> Any? {
        if name == "count" { return count }
        return text(named: name)
    }

    package func text(named name: String) -> String? {
        switch name {
        case "more": more
        case "count": String(count)
        default: caseForm(name, caseForms) { $0 == "more" ? more : nil }
        }
    }
}
