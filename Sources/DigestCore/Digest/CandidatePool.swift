/// The articles that may be picked this run, newest first, with a topic index for ranking.
///
/// Built once per run from the articles published in the fortnight before the week's end (with a day
/// of slack either side for time zones); each user then takes the ones inside their own window.
public struct CandidatePool: Sendable {
    /// Newest first; ties broken by id so picks are deterministic.
    public let articles: [Article]
    let topicPostings: [String: [Int32]]

    public init(articles: [Article]) {
        let sorted = articles.sorted {
            $0.publishedAt != $1.publishedAt ? $0.publishedAt > $1.publishedAt : $0.id < $1.id
        }
        var postings: [String: [Int32]] = [:]
        for (index, article) in sorted.enumerated() {
            for topic in Set(article.topics) {
                postings[topic, default: []].append(Int32(index))
            }
        }
        self.articles = sorted
        self.topicPostings = postings
    }

    /// Up to `limit` articles published in `[from, until)`, not in `exclude`, ranked by how many of
    /// `topics` they share, then by recency.
    public func pick(
        limit: Int, publishedFrom from: Int64, until: Int64, topics: some Sequence<String>,
        excluding exclude: Set<String>
    ) -> [Article] {
        guard limit > 0, !articles.isEmpty else { return [] }
        var overlap = [UInt8](repeating: 0, count: articles.count)
        for topic in topics {
            guard let list = topicPostings[topic] else { continue }
            for index in list where overlap[Int(index)] < UInt8.max { overlap[Int(index)] += 1 }
        }
        // Best `limit` by (overlap desc, index asc); indexes come in ascending order.
        var best: [(overlap: UInt8, index: Int)] = []
        best.reserveCapacity(limit + 1)
        for index in articles.indices {
            let score = overlap[index]
            if best.count == limit, let worst = best.last, score <= worst.overlap { continue }
            let article = articles[index]
            guard article.publishedAt >= from, article.publishedAt < until, !exclude.contains(article.id) else {
                continue
            }
            var position = best.count
            while position > 0 && best[position - 1].overlap < score { position -= 1 }
            best.insert((score, index), at: position)
            if best.count > limit { best.removeLast() }
        }
        return best.map { articles[$0.index] }
    }
}
