/// A candidate the reader's preferences kept out of their picks, and why: what the previews show
/// editors beside the picks ("muted: sports").
package struct LeftOutCandidate: Sendable, Hashable, Codable {
    /// The article's id and title.
    package var id: String
    package var title: String
    /// `muted: <topic>` (it carries a muted topic), `fewer: <topic>` (a topic the reader pressed
    /// "Fewer like this" on, held back to one pick), or `followed first: <topic>` (the pick of a
    /// followed topic placed first took its place).
    package var reason: String

    package init(id: String, title: String, reason: String) {
        self.id = id
        self.title = title
        self.reason = reason
    }
}

extension DigestBuilder {
    /// The best candidates `reader`'s preferences left out of `picks`: the picks the digest would have
    /// without mute and follow (over the same span and history), those not among `picks`, best
    /// first, with the reason. For the previews only: one more pick per reader asked.
    /// `fewer`: the topics held back for the digest (``ReaderPreferences/fewerTopics(dueAt:)``).
    package func leftOut(
        reader: Reader, window: WeekWindow, history: ReaderHistory, span: CoveredSpan?, picks: [Article],
        fewer: [String] = []
    ) -> [LeftOutCandidate] {
        let preferences = reader.preferences
        guard !preferences.mute.isEmpty || !preferences.follow.isEmpty || !fewer.isEmpty else { return [] }
        var plain = reader
        plain.preferences.mute = []
        plain.preferences.follow = []
        let baseline = build(reader: plain, window: window, history: history, span: span).picks
        let picked = Set(picks.map(\.id))
        let followed = picks.first.flatMap { first in
            preferences.follows(topics: first.topics) ? first.topics.first { preferences.follow.contains($0) } : nil
        }
        return baseline.filter { !picked.contains($0.id) }.map { article in
            let reason =
                preferences.mutedTopic(of: article.topics).map { "muted: \($0)" }
                ?? article.topics.first(where: fewer.contains).map { "fewer: \($0)" }
                ?? followed.map { "followed first: \($0)" } ?? "left out"
            return LeftOutCandidate(id: article.id, title: article.title, reason: reason)
        }
    }
}

extension BatchComposer {
    /// ``DigestBuilder/leftOut(reader:window:history:span:picks:)`` for a reader composed as
    /// `user` (nothing for a reader without a digest).
    package func leftOut(_ user: ComposedUser, history: ReaderHistory) -> [LeftOutCandidate] {
        guard let plan = user.plan else { return [] }
        let reader = user.reader
        let window = calendar.window(forZone: reader.timeZone).window
        let picks = plan.picks.compactMap { id in builder.pool.articles.first { $0.id == id } }
        return builder.leftOut(
            reader: reader, window: window, history: history, span: span(for: reader), picks: picks,
            fewer: reader.preferences.fewerTopics(dueAt: plan.deliverAt))
    }
}
